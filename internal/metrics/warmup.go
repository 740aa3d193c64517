package metrics

import (
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// Linux constants read from TCP_INFO.
const (
	// InfiniteSsthresh is TCP_INFINITE_SSTHRESH, the snd_ssthresh of a
	// connection that has not left its initial slow start (checked on
	// this kernel: a fresh socket reports 2147483647).
	InfiniteSsthresh = 0x7fffffff
	// caCWR is TCP_CA_CWR; CWR, Recovery (3) and Loss (4) all reduce cwnd.
	// Disorder (1) only notes dupacks or SACKs without reducing cwnd, so
	// it does not end slow start by itself.
	caCWR = 2
)

// Warm-up detection rules, as reported in Flow.WarmupHow.
const (
	WarmupSsthresh     = "ssthresh"
	WarmupCAState      = "ca_state"
	WarmupDeliveryRate = "delivery_rate_stable"
)

// Delivery-rate stability: every rate in a window of at least stableRTTs
// round trips (and at least stableSamples samples) within stableTol of
// the window's mean.
const (
	stableRTTs    = 3
	stableSamples = 3
	stableTol     = 0.05
)

// Warmup finds the end of slow start in a sender's TCP_INFO series
// (metrics.md §1), ordered by time. It returns the time of the earliest
// sample at which one of these rules holds, and the rule's name; on a tie
// the first rule listed wins.
//
//   - "ssthresh": snd_ssthresh is set (neither 0 nor ≥ InfiniteSsthresh)
//     and either it differs from the previous sample's (the kernel just set
//     or lowered it: a loss, ECN or HyStart) or cwnd has reached it. The
//     second case covers an ssthresh cached from an earlier connection to
//     the same host, which is set from the start while slow start goes on
//     until cwnd reaches it.
//   - "ca_state": ca_state is CWR, Recovery or Loss (a cwnd reduction).
//   - "delivery_rate_stable": the delivery rate of this sample and of every
//     sample back to the latest one at or before 3 × this sample's RTT ago
//     (at least 3 samples) is positive and within 5% of their mean. This
//     catches senders, such as BBR, that never set ssthresh. The time is
//     the sample at which stability is first seen, so it errs late by up to
//     3 RTTs, which only excludes a little more from the measurement.
//
// ok is false if no rule holds anywhere in the series.
func Warmup(series []model.TCPSample) (ts float64, how string, ok bool) {
	for i := range series {
		if h := warmupRule(series, i); h != "" {
			return series[i].TS, h, true
		}
	}
	return 0, "", false
}

// warmupRule names the first rule that holds at sample i, or "".
func warmupRule(series []model.TCPSample, i int) string {
	s := series[i]
	if ssthreshSet(s.SndSsthresh) {
		changed := i > 0 && series[i-1].SndSsthresh != s.SndSsthresh
		if changed || s.SndCwnd >= s.SndSsthresh {
			return WarmupSsthresh
		}
	}
	if s.CAState >= caCWR {
		return WarmupCAState
	}
	if rateStable(series, i) {
		return WarmupDeliveryRate
	}
	return ""
}

func ssthreshSet(v uint32) bool {
	return v != 0 && v < InfiniteSsthresh
}

// rateStable reports whether the delivery rate is stable in the window of
// at least stableRTTs round trips that ends at sample i.
func rateStable(series []model.TCPSample, i int) bool {
	s := series[i]
	if s.RTTUs == 0 || i < stableSamples-1 {
		return false
	}
	from := s.TS - stableRTTs*float64(s.RTTUs)/1e6
	k := -1
	for j := i - (stableSamples - 1); j >= 0; j-- {
		if series[j].TS <= from {
			k = j
			break
		}
	}
	if k < 0 { // the series does not reach back 3 RTTs yet
		return false
	}
	w := series[k : i+1]
	var sum float64
	for _, x := range w {
		if !(x.DeliveryRateBps > 0) || math.IsInf(x.DeliveryRateBps, 0) {
			return false
		}
		sum += x.DeliveryRateBps
	}
	m := sum / float64(len(w))
	for _, x := range w {
		if math.Abs(x.DeliveryRateBps-m) > stableTol*m {
			return false
		}
	}
	return true
}
