package passive

import (
	"math"
	"slices"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
)

// rttStats summarises one method's samples of one flow in bounded memory:
// running count, sum, min and max; for the quantiles the first exactMax
// values exactly, and beyond that a log-linear histogram. So the default
// output needs memory per live flow, not per sample. The histogram is
// dense over the buckets the flow's values have reached (a window that
// grows as needed; a flow's RTTs span a few hundred of the 1664 buckets).
// Values reach it exactMax at a time: the per-sample path appends to a
// small buffer, and a fold touches the few histogram lines a batch of
// similar RTTs falls in, while the analyser's thousands of live flows
// have evicted them from the cache between one sample and the next.
type rttStats struct {
	n, rejected uint32
	sum         int64 // ns
	min, max    int64
	exact       []int64  // the values not yet in hist
	lo          int      // bucket of hist[0]
	hist        []uint32 // counts of buckets lo … lo+len(hist)-1; nil while every value is in exact
}

// exactMax values are kept exactly (the quantiles of short flows are then
// those of the samples).
const exactMax = 64

// Histogram: log-linear buckets from the float64 representation, histSub
// per power of two (bucket width ≤ 1/64 = 1.6 %, so a quantile is within
// 0.8 % of a sample, and clamped to min and max), from 2^histMinExp ns
// (≈ 4 µs) to 2^(histMinExp+histOctaves) ns (≈ 275 s); values outside go
// to the end buckets. 1664 buckets.
const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	histMinExp  = 12
	histOctaves = 26
	histBuckets = histOctaves * histSub
)

func histBucket(v int64) int {
	b := math.Float64bits(float64(max(v, 1)))
	// exponent and the top histSubBits of the mantissa
	i := int(b>>(52-histSubBits)) - (1023+histMinExp)<<histSubBits
	return min(max(i, 0), histBuckets-1)
}

// histValue is the middle of bucket i.
func histValue(i int) float64 {
	lo := math.Float64frombits(uint64(i+(1023+histMinExp)<<histSubBits) << (52 - histSubBits))
	return lo * (1 + 0.5/histSub)
}

func (s *rttStats) add(rtt int64, valid bool) {
	if !valid {
		s.rejected++
		return
	}
	if s.n == 0 || rtt < s.min {
		s.min = rtt
	}
	if s.n == 0 || rtt > s.max {
		s.max = rtt
	}
	s.n++
	s.sum += rtt
	if len(s.exact) == exactMax {
		s.fold()
	}
	if s.exact == nil {
		s.exact = make([]int64, 0, 16) // then one step to exactMax
	}
	s.exact = append(s.exact, rtt)
}

// fold moves the buffered values into the histogram, widening its window
// once for the whole batch.
func (s *rttStats) fold() {
	if len(s.exact) == 0 {
		return
	}
	var idx [exactMax]int
	lo, hi := histBuckets, -1
	for i, v := range s.exact {
		b := histBucket(v)
		idx[i] = b
		lo, hi = min(lo, b), max(hi, b)
	}
	s.widen(lo)
	s.widen(hi)
	for _, b := range idx[:len(s.exact)] {
		s.hist[b-s.lo]++
	}
	s.exact = s.exact[:0]
}

// widen grows the window, if need be, to include bucket i, with room to spare on the
// side it grew (half the new span, at least 16 buckets), so that a slowly
// drifting RTT does not copy the window on every new bucket.
func (s *rttStats) widen(i int) {
	if s.hist != nil && i >= s.lo && i < s.lo+len(s.hist) {
		return
	}
	if s.hist == nil {
		s.lo = max(i-8, 0)
		s.hist = make([]uint32, min(16, histBuckets-s.lo))
		return
	}
	lo, hi := s.lo, s.lo+len(s.hist) // hi exclusive
	slack := max((max(hi, i+1)-min(lo, i))/2, 16)
	if i < lo {
		lo = max(i-slack, 0)
	} else {
		hi = min(i+1+slack, histBuckets)
	}
	h := make([]uint32, hi-lo)
	copy(h[s.lo-lo:], s.hist)
	s.lo, s.hist = lo, h
}

// quantile p (0-100) from the histogram: the bucket holding the sample of
// that rank (metrics.Percentile's rank, rounded).
func (s *rttStats) quantile(p float64) float64 {
	rank := int64(math.Round(float64(s.n-1) * p / 100))
	var seen int64
	for j, n := range s.hist {
		seen += int64(n)
		if seen > rank {
			return min(max(histValue(s.lo+j), float64(s.min)), float64(s.max))
		}
	}
	return float64(s.max)
}

func (s *rttStats) summary() model.RTTSummary {
	r := model.RTTSummary{Samples: int(s.n), Rejected: int(s.rejected)}
	if s.n == 0 {
		return r
	}
	r.MinMs, r.MaxMs = float64(s.min)/1e6, float64(s.max)/1e6
	r.MeanMs = float64(s.sum) / float64(s.n) / 1e6
	if s.hist == nil {
		ms := make([]float64, len(s.exact))
		for i, v := range s.exact {
			ms[i] = float64(v) / 1e6
		}
		slices.Sort(ms)
		r.MedianMs = metrics.Percentile(ms, 50)
		r.P90Ms = metrics.Percentile(ms, 90)
		return r
	}
	s.fold()
	r.MedianMs = s.quantile(50) / 1e6
	r.P90Ms = s.quantile(90) / 1e6
	return r
}
