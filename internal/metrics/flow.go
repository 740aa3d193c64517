package metrics

import (
	"fmt"
	"math"
	"sort"

	"github.com/sonde-project/sonde/internal/model"
)

// FinishFlow fills a flow's derived fields from its sender-side TCP_INFO
// series (f.TCPInfo, ordered by time):
//
//   - WarmupS and WarmupHow from Warmup (WarmupS = −1 if none was found);
//   - EfficiencyPct, BytesSent, BytesRetrans and Bottleneck from the first
//     and last samples inside [windowStartS, windowEndS];
//   - MaxAchievableBps = mean window × 8 / mean RTT over the samples inside
//     it, the window of a sample being min(snd_wnd, cwnd × snd_mss): what
//     the sender could have in flight (snd_wnd is the peer's advertised
//     receive window; 0 means the kernel did not report it and only cwnd
//     counts).
//
// A negative windowStartS means the flow's own end of warm-up, or the start
// of the series if none was detected; pass math.Inf(1) as windowEndS for
// "to the end". With fewer than two samples in the window the window
// figures are zero and the verdict "unknown".
func FinishFlow(f *model.Flow, windowStartS, windowEndS float64) {
	ts, how, ok := Warmup(f.TCPInfo)
	f.WarmupS, f.WarmupHow = -1, ""
	if ok {
		f.WarmupS, f.WarmupHow = ts, how
	}
	if windowStartS < 0 {
		windowStartS = math.Inf(-1)
		if ok {
			windowStartS = ts
		}
	}
	f.EfficiencyPct, f.BytesSent, f.BytesRetrans = 0, 0, 0
	f.Bottleneck = model.Bottleneck{Verdict: VerdictUnknown}
	f.MaxAchievableBps = 0
	w := samplesIn(f.TCPInfo, windowStartS, windowEndS)
	if len(w) < 2 {
		return
	}
	first, last := w[0], w[len(w)-1]
	f.EfficiencyPct, f.BytesSent, f.BytesRetrans = EfficiencyPct(first, last)
	f.Bottleneck = Attribute(first, last)
	f.MaxAchievableBps = maxAchievable(w)
}

// samplesIn is the part of a time-ordered series with t0 ≤ TS ≤ t1.
func samplesIn(series []model.TCPSample, t0, t1 float64) []model.TCPSample {
	i := sort.Search(len(series), func(i int) bool { return series[i].TS >= t0 })
	j := sort.Search(len(series), func(j int) bool { return series[j].TS > t1 })
	if j <= i {
		return nil
	}
	return series[i:j]
}

// maxAchievable is RFC 6349's T = W × 8 / RTT for the mean window and the
// mean smoothed RTT of the samples that have an RTT.
func maxAchievable(w []model.TCPSample) float64 {
	var wnd, rtt float64
	var n int
	for _, s := range w {
		if s.RTTUs == 0 {
			continue
		}
		win := float64(s.SndCwnd) * float64(s.SndMSS)
		if s.SndWnd > 0 {
			win = math.Min(win, float64(s.SndWnd))
		}
		wnd += win
		rtt += float64(s.RTTUs)
		n++
	}
	if n == 0 {
		return 0
	}
	return MaxAchievableBps(wnd/float64(n), rtt/float64(n)/1e6)
}

// BuildRFC6349 assembles the RFC 6349 report of one load phase.
//
// The measurement window runs from the latest end of warm-up among the
// flows (a flow without a detected one counts from the phase start, with a
// note) to the phase end. The phase is [earliest flow StartS, latest flow
// EndS], or the span of counts when the flows carry no times, and is
// narrowed to the span of counts so that goodput is never computed over
// time the counts do not cover. counts are the aggregate receiver-side
// cumulative payload bytes of the phase.
//
// BuildRFC6349 calls FinishFlow on every flow of d with that window, so
// the per-flow figures and the direction's agree; it changes nothing else
// in d. Efficiency sums the flows' sent and retransmitted bytes; buffer
// delay uses the raw probe RTTs of d.Latency inside the window (not
// tcpi_rtt) against baselineRTTMs. Path MTU and MSS are the smallest
// pmtu and snd_mss the senders reported in the window. With linkRateBps > 0
// it adds the maximum goodput MSS / (PMTU + wireOverhead) × LS (wireOverhead
// is the bytes each packet costs on the link beyond the IP packet:
// EthernetOverhead on Ethernet, 0 on an IP-level link; negative counts as
// 0), the BDP over the baseline RTT, the ideal
// transfer time and TTR; without it those stay zero and a note says so.
// Maxima of cwnd (× MSS), snd_wnd and rcv_space come from the senders'
// TCP_INFO in the window; rcv_space of a pure sender is its own receive
// side, not the receiver's. MaxAchievableBps is the sum over flows.
func BuildRFC6349(d *model.DirectionResult, counts []ByteCount, baselineRTTMs, linkRateBps float64, wireOverhead int) *model.RFC6349 {
	r := &model.RFC6349{BaselineRTTMs: baselineRTTMs, LinkRateBps: math.Max(linkRateBps, 0)}
	if d == nil {
		r.Notes = append(r.Notes, "no load phase to report")
		return r
	}
	start, end, ok := phaseBounds(d, counts)
	if !ok {
		r.Notes = append(r.Notes, "the load phase has no duration; nothing to report")
		return r
	}
	ws := start
	for _, f := range d.Flows {
		t, _, ok := Warmup(f.TCPInfo)
		if !ok {
			r.Notes = append(r.Notes, fmt.Sprintf("flow %d: no end of slow start detected; its warm-up is not excluded", f.ID))
			continue
		}
		ws = math.Max(ws, t)
	}
	if ws >= end {
		r.Notes = append(r.Notes, fmt.Sprintf("slow start lasted until %.3f s, past the phase end %.3f s; the window is the whole phase", ws, end))
		ws = start
	}
	r.WindowStartS, r.WindowEndS, r.DurationS = ws, end, end-ws

	if len(counts) == 0 {
		r.Notes = append(r.Notes, "no receiver byte counts; goodput not computed")
	} else {
		r.Bytes = BytesBetween(counts, ws, end)
		r.GoodputBps = float64(r.Bytes) * 8 / r.DurationS
	}

	flowFigures(d, r, ws, end)
	bufferDelay(d.Latency, r, ws, end)
	linkFigures(r, linkRateBps, wireOverhead)
	return r
}

// phaseBounds is the phase's time span: the flows' if they carry times,
// else the counts', in both cases clipped to the counts' span.
func phaseBounds(d *model.DirectionResult, counts []ByteCount) (start, end float64, ok bool) {
	start, end = math.Inf(1), math.Inf(-1)
	for _, f := range d.Flows {
		if f.EndS > f.StartS {
			start, end = math.Min(start, f.StartS), math.Max(end, f.EndS)
		}
	}
	if len(counts) > 0 {
		c0, c1 := counts[0].TS, counts[len(counts)-1].TS
		if end < start { // no flow times
			start, end = c0, c1
		}
		start, end = math.Max(start, c0), math.Min(end, c1)
	}
	return start, end, end > start
}

// flowFigures finishes every flow over [ws, we] and sums or summarises the
// flows' figures into r.
func flowFigures(d *model.DirectionResult, r *model.RFC6349, ws, we float64) {
	var sent, retrans uint64
	mss, pmtu := map[uint32]bool{}, map[uint32]bool{}
	verdicts := map[string]int{}
	for i := range d.Flows {
		f := &d.Flows[i]
		FinishFlow(f, ws, we)
		sent += f.BytesSent
		retrans += f.BytesRetrans
		r.MaxAchievableBps += f.MaxAchievableBps
		verdicts[f.Bottleneck.Verdict]++
		r.SndBufBytes = max(r.SndBufBytes, f.SndBufBytes)
		r.RcvBufBytes = max(r.RcvBufBytes, f.RcvBufBytes)
		for _, s := range samplesIn(f.TCPInfo, ws, we) {
			if s.SndMSS > 0 {
				mss[s.SndMSS] = true
			}
			if s.PMTU > 0 {
				pmtu[s.PMTU] = true
			}
			r.MaxCwndBytes = max(r.MaxCwndBytes, uint64(s.SndCwnd)*uint64(s.SndMSS))
			r.MaxSndWndBytes = max(r.MaxSndWndBytes, s.SndWnd)
			r.MaxRcvSpaceBytes = max(r.MaxRcvSpaceBytes, s.RcvSpace)
		}
	}
	r.BytesSent, r.BytesRetrans = sent, retrans
	r.EfficiencyPct = efficiency(sent, retrans)
	if sent == 0 {
		r.Notes = append(r.Notes, "the senders' TCP_INFO shows no bytes sent in the window; efficiency not computed")
	}
	r.MSS, r.PathMTU = smallest(mss), smallest(pmtu)
	if len(mss) > 1 || len(pmtu) > 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("flows reported different MSS or path MTU; the smallest (MSS %d, MTU %d) is used", r.MSS, r.PathMTU))
	}
	r.Bottleneck = summariseVerdicts(verdicts, len(d.Flows))
}

// smallest is the least key of set, 0 for an empty set.
func smallest(set map[uint32]bool) uint32 {
	var m uint32
	for v := range set {
		if m == 0 || v < m {
			m = v
		}
	}
	return m
}

// summariseVerdicts is the flows' common verdict, or the most frequent one
// with its count ("receiver window (2 of 3 flows)"). Ties prefer the order
// network, receiver window, sender buffer, unknown.
func summariseVerdicts(counts map[string]int, n int) string {
	if n == 0 {
		return VerdictUnknown
	}
	best, bestN := "", 0
	for _, v := range []string{VerdictNetwork, VerdictReceiverWindow, VerdictSenderBuffer, VerdictUnknown} {
		if counts[v] > bestN {
			best, bestN = v, counts[v]
		}
	}
	if bestN == n {
		return best
	}
	return fmt.Sprintf("%s (%d of %d flows)", best, bestN, n)
}

// bufferDelay fills the loaded RTT and buffer delay from the probe RTTs
// sent inside [ws, we].
func bufferDelay(lat *model.RTTResult, r *model.RFC6349, ws, we float64) {
	var rtts []float64
	if lat != nil {
		for _, s := range lat.Samples {
			if s.TS >= ws && s.TS <= we && s.RTTMs > 0 {
				rtts = append(rtts, s.RTTMs)
			}
		}
	}
	if len(rtts) == 0 {
		r.Notes = append(r.Notes, "no latency probes inside the window; buffer delay not computed")
		return
	}
	r.LoadedRTTMeanMs = mean(rtts)
	if r.BaselineRTTMs <= 0 {
		r.Notes = append(r.Notes, "no baseline RTT; buffer delay not computed")
		return
	}
	r.BufferDelayPct = BufferDelayPct(r.LoadedRTTMeanMs, r.BaselineRTTMs)
}

// linkFigures fills what needs the link rate: maximum goodput, BDP, ideal
// transfer time and TTR.
func linkFigures(r *model.RFC6349, linkRateBps float64, wireOverhead int) {
	if !(linkRateBps > 0) {
		r.Notes = append(r.Notes, "TTR needs --link-rate")
		return
	}
	wireOverhead = max(wireOverhead, 0)
	if r.MSS == 0 || r.PathMTU == 0 {
		r.Notes = append(r.Notes, "path MTU or MSS unknown; maximum goodput and TTR not computed")
		return
	}
	r.MaxGoodputBps = MaxGoodputBps(int(r.MSS), int(r.PathMTU)+wireOverhead, linkRateBps)
	r.BDPBits = BDPBits(linkRateBps, r.BaselineRTTMs/1000)
	if r.BDPBits == 0 {
		r.Notes = append(r.Notes, "no baseline RTT; BDP not computed")
	}
	r.IdealTransferS = IdealTransferS(r.Bytes, r.MaxGoodputBps)
	r.TTR = TTR(r.DurationS, r.IdealTransferS)
	if r.TTR > 0 && r.TTR < 1 {
		r.Notes = append(r.Notes, fmt.Sprintf("TTR %.3f < 1: goodput beat the maximum for a %.0f bit/s link; check --link-rate", r.TTR, linkRateBps))
	}
}
