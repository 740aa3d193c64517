package metrics

import "github.com/sonde-project/sonde/internal/model"

// Ethernet per-frame overhead on the wire beyond the IP MTU (metrics.md §1):
// preamble and start delimiter 8 B, header 14 B, FCS 4 B, inter-frame gap
// 12 B; an 802.1Q tag adds 4 B.
const (
	EthernetOverhead = 38
	VLANTagBytes     = 4
)

// Bottleneck verdicts (model.Bottleneck.Verdict).
const (
	VerdictReceiverWindow = "receiver window"
	VerdictSenderBuffer   = "sender buffer"
	VerdictNetwork        = "network"
	// VerdictUnknown means the window held no busy time to attribute.
	VerdictUnknown = "unknown"
)

// BDPBits is the bandwidth-delay product in bits: rate [bit/s] × RTT [s].
func BDPBits(rateBps, rttS float64) float64 {
	if rateBps <= 0 || rttS <= 0 {
		return 0
	}
	return rateBps * rttS
}

// MaxAchievableBps is the most a window of windowBytes can carry per round
// trip: T = RWND × 8 / RTT (RFC 6349 §3.3.1). 0 if the RTT is unknown.
func MaxAchievableBps(windowBytes, rttS float64) float64 {
	if windowBytes <= 0 || rttS <= 0 {
		return 0
	}
	return windowBytes * 8 / rttS
}

// WireFrameBytes is the size on an Ethernet wire of a frame carrying an IP
// packet of mtu bytes, including preamble and inter-frame gap.
func WireFrameBytes(mtu int, vlan bool) int {
	n := mtu + EthernetOverhead
	if vlan {
		n += VLANTagBytes
	}
	return n
}

// MaxGoodputBps is the highest TCP payload rate a link of linkRateBps can
// carry with full-size segments: MSS / wire frame × LS. With MSS 1460 and a
// 1538 B frame on 1 Gbit/s that is 949.28 Mbit/s.
func MaxGoodputBps(mss, wireFrameBytes int, linkRateBps float64) float64 {
	if mss <= 0 || wireFrameBytes <= 0 || linkRateBps <= 0 {
		return 0
	}
	return float64(mss) / float64(wireFrameBytes) * linkRateBps
}

// IdealTransferS is RFC 6349's ideal TCP transfer time: payload bits divided
// by the maximum TCP goodput. 0 if the goodput is unknown.
func IdealTransferS(payloadBytes int64, maxGoodputBps float64) float64 {
	if payloadBytes <= 0 || maxGoodputBps <= 0 {
		return 0
	}
	return float64(payloadBytes) * 8 / maxGoodputBps
}

// TTR is the transfer time ratio, actual / ideal (≥ 1 on a correctly
// described link). Seed 000 inverts it; RFC 6349 §4.1 does not. 0 if the
// ideal time is unknown.
func TTR(actualS, idealS float64) float64 {
	if actualS <= 0 || idealS <= 0 {
		return 0
	}
	return actualS / idealS
}

// EfficiencyPct is RFC 6349's TCP efficiency over the window between two
// sender-side samples: 100 × (sent − retransmitted) / sent, from the deltas
// of tcpi_bytes_sent (which counts retransmissions) and tcpi_bytes_retrans,
// never lifetime counters. If nothing was sent in the window (or the
// counters went backwards, i.e. the samples are from different sockets or
// out of order) it returns pct = 0, sent = 0, retrans = 0: there is no
// efficiency to report, and the caller sees that from sent = 0.
func EfficiencyPct(first, last model.TCPSample) (pct float64, sent, retrans uint64) {
	if last.BytesSent <= first.BytesSent || last.BytesRetrans < first.BytesRetrans {
		return 0, 0, 0
	}
	sent = last.BytesSent - first.BytesSent
	retrans = last.BytesRetrans - first.BytesRetrans
	return efficiency(sent, retrans), sent, retrans
}

// efficiency is 100 × (sent − retrans) / sent, clamped to [0, 100].
func efficiency(sent, retrans uint64) float64 {
	if sent == 0 {
		return 0
	}
	if retrans >= sent {
		return 0
	}
	return 100 * float64(sent-retrans) / float64(sent)
}

// BufferDelayPct is RFC 6349's buffer delay: 100 × (mean loaded RTT −
// baseline RTT) / baseline RTT. 0 without a baseline.
func BufferDelayPct(meanLoadedRTTMs, baselineRTTMs float64) float64 {
	if baselineRTTMs <= 0 || meanLoadedRTTMs <= 0 {
		return 0
	}
	return 100 * (meanLoadedRTTMs - baselineRTTMs) / baselineRTTMs
}

// Attribute says what limited a flow between two sender-side samples, from
// the deltas of tcpi_rwnd_limited and tcpi_sndbuf_limited over tcpi_busy_time.
// Linux's busy_time is the total of the busy, rwnd-limited and
// sndbuf-limited chronos, so the two shares plus the network (cwnd-limited)
// share sum to 100%. The verdict is the limit that held for the largest
// share of busy time (a plurality, no arbitrary threshold); a tie goes to
// "network", since an endpoint is blamed only on evidence, and then to the
// receiver window. The chronos tick in jiffies (4 ms at HZ=250), so windows
// much shorter than a second are coarse. With no busy time in the window the
// verdict is "unknown".
func Attribute(first, last model.TCPSample) model.Bottleneck {
	busy := delta(first.BusyTimeUs, last.BusyTimeUs)
	if busy == 0 {
		return model.Bottleneck{Verdict: VerdictUnknown}
	}
	rwnd := min(delta(first.RwndLimitedUs, last.RwndLimitedUs), busy)
	sndbuf := min(delta(first.SndbufLimitedUs, last.SndbufLimitedUs), busy-rwnd)
	network := busy - rwnd - sndbuf
	b := model.Bottleneck{
		RwndLimitedPct:   100 * float64(rwnd) / float64(busy),
		SndbufLimitedPct: 100 * float64(sndbuf) / float64(busy),
		Verdict:          VerdictNetwork,
	}
	switch {
	case rwnd > network && rwnd >= sndbuf:
		b.Verdict = VerdictReceiverWindow
	case sndbuf > network && sndbuf > rwnd:
		b.Verdict = VerdictSenderBuffer
	}
	return b
}

// delta is b − a for a counter, 0 if it went backwards.
func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}
