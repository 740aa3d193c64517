package metrics

import (
	"math"
)

// Delay variation (metrics.md §2). Inputs are per-packet times in the
// caller's unit; outputs are in the same unit.

// Jitter3550 is the RFC 3550 §6.4.1 interarrival jitter after the last
// packet: for consecutive received packets in arrival order,
// D = (R_i − R_{i−1}) − (S_i − S_{i−1}) and J ← J + (|D| − J)/16, starting
// from J = 0. send[i] and recv[i] are packet i's send time on the sender's
// clock and arrival time on the receiver's clock; a constant offset between
// the clocks cancels, so no synchronisation is needed. Pairs with a
// non-finite time are skipped. Fewer than two usable packets give 0.
func Jitter3550(send, recv []float64) float64 {
	n := min(len(send), len(recv))
	var j float64
	prev := -1
	for i := 0; i < n; i++ {
		if !isFiniteNum(send[i]) || !isFiniteNum(recv[i]) {
			continue
		}
		if prev >= 0 {
			d := (recv[i] - recv[prev]) - (send[i] - send[prev])
			j += (math.Abs(d) - j) / 16
		}
		prev = i
	}
	return j
}

// IPDV is the RFC 3393 (RFC 5481 §4.1) inter-packet delay variation:
// owd[i] − owd[i−1] for every pair of consecutive sequence numbers that were
// both received. owd is indexed by sequence number, NaN marking a lost
// packet. A constant clock offset cancels, so estimated one-way delays give
// exact IPDV.
func IPDV(owd []float64) []float64 {
	var out []float64
	for i := 1; i < len(owd); i++ {
		if isFiniteNum(owd[i]) && isFiniteNum(owd[i-1]) {
			out = append(out, owd[i]-owd[i-1])
		}
	}
	return out
}

// PDV is the RFC 5481 §4.2 packet delay variation: owd[i] − min(owd) for
// every received packet (NaN marks a lost one), so the fastest packet has
// PDV 0.
func PDV(owd []float64) []float64 {
	lo := math.Inf(1)
	for _, d := range owd {
		if isFiniteNum(d) && d < lo {
			lo = d
		}
	}
	var out []float64
	for _, d := range owd {
		if isFiniteNum(d) {
			out = append(out, d-lo)
		}
	}
	return out
}

// Abs returns |x| for every x, for percentiles of IPDV magnitudes.
func Abs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x)
	}
	return out
}

func isFiniteNum(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
