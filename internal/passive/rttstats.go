package passive

import (
	"math"
	"math/bits"
	"slices"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
)

// rttStats summarises one method's samples of one flow in bounded memory:
// running count, sum, min and max (exact); for the quantiles the first
// exactMax values exactly, and beyond that a log-linear histogram (bucket
// width ≤ 1.6 %: a quantile is within 0.8 % of the sample of its rank). So
// the default output needs memory per live flow, not per sample. The
// histogram is sparse: the buckets a flow's values reached, sorted, with
// their counts (a flow's RTTs fall in tens of buckets, but its side RTTs
// near the observer and its full RTTs can lie a thousand buckets apart,
// which a dense window paid for in full: 13 MB for 2260 flows). Values
// reach it exactMax at a time: the per-sample path appends to a small
// buffer, and a fold merges a sorted batch into the buckets, while the
// analyser's thousands of live flows have evicted them from the cache
// between one sample and the next.
type rttStats struct {
	n, rejected uint32
	sum         int64 // ns
	min, max    int64
	exact       []int64  // the values not yet in the histogram
	buckets     []uint16 // histogram: buckets with a count, ascending
	counts      []uint32 // ... and their counts; nil while every value is in exact
	// octs index the buckets by octave, from octave oct0 to the last
	// the flow reached: a value's bucket is found with a bit test and a
	// population count instead of a binary search (in a flow whose
	// samples spread over a hundred buckets, the searches' dependent
	// steps were most of a fold).
	octs []octIndex
	oct0 int
}

// octIndex is one octave's buckets: bit i of has is set when bucket
// octave·histSub+i is in buckets, the first of them at index start.
type octIndex struct {
	has   uint64
	start int32
}

// exactMax values are kept exactly (the quantiles of short flows are then
// those of the samples).
const exactMax = 64

// foldBatch is the buffer once the histogram exists.
const foldBatch = 16

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
	if len(s.exact) == exactMax || s.counts != nil && len(s.exact) == foldBatch {
		s.fold()
		if cap(s.exact) > foldBatch {
			// Past the exact values the buffer only batches folds: a
			// quarter of the size (a long flow's summaries held 2.5 KB).
			s.exact = make([]int64, 0, foldBatch)
		}
	}
	switch {
	case s.exact == nil:
		s.exact = make([]int64, 0, 16)
	case len(s.exact) == 16:
		// One step to exactMax (append took two, each a copy).
		s.exact = append(make([]int64, 0, exactMax), s.exact...)
	}
	s.exact = append(s.exact, rtt)
}

// fold merges the buffered values into the histogram. Most values of a
// batch fall in buckets the flow already has: they are counted in place
// (binary search); the others are sorted and merged in from the back.
func (s *rttStats) fold() {
	if len(s.exact) == 0 {
		return
	}
	var idx [exactMax]uint16
	miss := idx[:0]
	for _, v := range s.exact {
		b := histBucket(v)
		if o := b>>histSubBits - s.oct0; uint(o) < uint(len(s.octs)) {
			e := &s.octs[o]
			if bit := uint64(1) << (b & (histSub - 1)); e.has&bit != 0 {
				s.counts[int(e.start)+bits.OnesCount64(e.has&(bit-1))]++
				continue
			}
		}
		miss = append(miss, uint16(b))
	}
	s.exact = s.exact[:0]
	if len(miss) == 0 {
		return
	}
	slices.Sort(miss)
	fresh := 1
	for i := 1; i < len(miss); i++ {
		if miss[i] != miss[i-1] {
			fresh++
		}
	}
	old := len(s.buckets)
	s.buckets = slices.Grow(s.buckets, fresh)[:old+fresh]
	s.counts = slices.Grow(s.counts, fresh)[:old+fresh]
	i, j := len(miss)-1, old-1
	for k := old + fresh - 1; i >= 0; k-- {
		b := miss[i]
		n := uint32(0)
		for i >= 0 && miss[i] == b {
			n++
			i--
		}
		for j >= 0 && s.buckets[j] > b {
			s.buckets[k], s.counts[k] = s.buckets[j], s.counts[j]
			j--
			k--
		}
		s.buckets[k], s.counts[k] = b, n
	}
	s.reindex()
}

// reindex rebuilds octs from buckets (after a fold added buckets).
func (s *rttStats) reindex() {
	lo, hi := int(s.buckets[0])>>histSubBits, int(s.buckets[len(s.buckets)-1])>>histSubBits
	n := hi - lo + 1
	if cap(s.octs) < n {
		s.octs = make([]octIndex, n)
	} else {
		s.octs = s.octs[:n]
		clear(s.octs)
	}
	s.oct0 = lo
	for j, b := range s.buckets {
		e := &s.octs[int(b)>>histSubBits-lo]
		if e.has == 0 {
			e.start = int32(j)
		}
		e.has |= 1 << (b & (histSub - 1))
	}
}

// quantile p (0-100) from the histogram: the bucket holding the sample of
// that rank (metrics.Percentile's rank, rounded).
func (s *rttStats) quantile(p float64) float64 {
	rank := int64(math.Round(float64(s.n-1) * p / 100))
	var seen int64
	for j, n := range s.counts {
		seen += int64(n)
		if seen > rank {
			return min(max(histValue(int(s.buckets[j])), float64(s.min)), float64(s.max))
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
	if s.counts == nil {
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
