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
// histogram is sparse: the counts of the buckets a flow's values reached,
// in order, and a bitmap per octave of which those are (a flow's RTTs fall in tens of buckets, but its side RTTs
// near the observer and its full RTTs can lie a thousand buckets apart,
// which a dense window paid for in full: 13 MB for 2260 flows). Values
// reach it exactMax at a time: the per-sample path appends to a small
// buffer, and a fold adds a batch to the histogram, while the
// analyser's thousands of live flows have evicted them from the cache
// between one sample and the next.
type rttStats struct {
	n, rejected uint32
	sum         int64 // ns
	min, max    int64
	exact       []int64 // the values, until exactMax of them
	// pend are the buckets of the values not yet in the histogram, once
	// it exists: a fold needs no more of a value than its bucket, and
	// at two bytes a value a batch is foldBatch long in the memory of
	// 16 values (a fold moves counts up to make room for new buckets:
	// the longer the batch, the fewer the moves).
	pend []uint16
	// counts are the histogram: the counts of the buckets with values,
	// in ascending order of bucket; nil while every value is in exact.
	counts []uint32
	// octs say which buckets those are, by octave, from octave oct0 to
	// the last the flow reached: a value's count is found with a bit
	// test and a population count instead of a binary search (in a
	// flow whose samples spread over a hundred buckets, the searches'
	// dependent steps were most of a fold).
	octs []octIndex
	oct0 int
}

// octIndex is one octave's buckets: bit i of has is set when bucket
// octave·histSub+i has values, the first of them counted at counts[start].
type octIndex struct {
	has   uint64
	start int32
}

// exactMax values are kept exactly (the quantiles of short flows are then
// those of the samples).
const exactMax = 64

// foldBatch is the buffer (pend) once the histogram exists.
const foldBatch = 64

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
	if s.counts != nil {
		if len(s.pend) == foldBatch {
			s.fold()
		}
		s.pend = append(s.pend, uint16(histBucket(rtt)))
		return
	}
	if len(s.exact) == exactMax {
		// Past the exact values only their buckets are kept (a long
		// flow's summaries held 2.5 KB of values).
		s.fold()
		s.exact = nil
		s.pend = make([]uint16, 1, foldBatch)
		s.pend[0] = uint16(histBucket(rtt))
		return
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

// fold adds the buffered values (the exact ones, then the buckets of
// later ones) to the histogram. Most values of a batch
// fall in buckets the flow already has: they are counted in place (a bit
// test and a population count in their octave's index); the buckets of
// the others are added to the bitmaps, and the counts moved up to their
// new places from the back, once per fold.
func (s *rttStats) fold() {
	bs := s.pend
	if s.counts == nil {
		if len(s.exact) == 0 {
			return
		}
		var all [exactMax]uint16
		for i, v := range s.exact {
			all[i] = uint16(histBucket(v))
		}
		bs = all[:len(s.exact)]
	}
	if len(bs) == 0 {
		return
	}
	var idx [max(exactMax, foldBatch)]uint16
	miss := idx[:0]
	for _, u := range bs {
		b := int(u)
		if o := b>>histSubBits - s.oct0; uint(o) < uint(len(s.octs)) {
			e := &s.octs[o]
			if bit := uint64(1) << (b & (histSub - 1)); e.has&bit != 0 {
				s.counts[int(e.start)+bits.OnesCount64(e.has&(bit-1))]++
				continue
			}
		}
		miss = append(miss, u)
	}
	s.pend = s.pend[:0]
	if len(miss) > 0 {
		s.insert(miss)
	}
}

// insert adds the buckets of miss (with repeats) to the histogram and
// counts their values. The octaves' bitmaps before and after tell each
// count its new place (the buckets stay in ascending order): a count
// moves up by the new buckets below it, and those take a zero count
// before the values are counted. Nothing is sorted and no index is
// rebuilt from the buckets (both were most of a fold).
func (s *rttStats) insert(miss []uint16) {
	lo, hi := int(miss[0])>>histSubBits, int(miss[0])>>histSubBits
	for _, b := range miss[1:] {
		lo, hi = min(lo, int(b)>>histSubBits), max(hi, int(b)>>histSubBits)
	}
	if len(s.octs) > 0 {
		lo, hi = min(lo, s.oct0), max(hi, s.oct0+len(s.octs)-1)
	}
	// old holds the bitmaps before the fold, on the new octave range.
	var old [histOctaves]uint64
	for i, e := range s.octs {
		old[s.oct0-lo+i] = e.has
	}
	n := hi - lo + 1
	if cap(s.octs) < n {
		s.octs = make([]octIndex, n)
	} else {
		s.octs = s.octs[:n]
	}
	for i := range s.octs {
		s.octs[i].has = old[i]
	}
	s.oct0 = lo
	for _, b := range miss {
		s.octs[int(b)>>histSubBits-lo].has |= 1 << (b & (histSub - 1))
	}
	was, total := len(s.counts), 0
	for i := range s.octs {
		s.octs[i].start = int32(total)
		total += bits.OnesCount64(s.octs[i].has)
	}
	s.counts = slices.Grow(s.counts, total-was)[:total]
	// From the highest bucket down, until every new bucket is placed
	// (below that, the counts are where they were).
	k, j := total-1, was-1
	for o := n - 1; o >= 0 && k > j; o-- {
		has, had := s.octs[o].has, old[o]
		for has != 0 && k > j {
			bit := uint64(1) << (63 - bits.LeadingZeros64(has))
			has &^= bit
			if had&bit != 0 {
				s.counts[k] = s.counts[j]
				j--
			} else {
				s.counts[k] = 0
			}
			k--
		}
	}
	for _, b := range miss {
		e := &s.octs[int(b)>>histSubBits-lo]
		s.counts[int(e.start)+bits.OnesCount64(e.has&(uint64(1)<<(b&(histSub-1))-1))]++
	}
}

// each calls fn with the histogram's buckets and their counts, in
// ascending order.
func (s *rttStats) each(fn func(b int, n uint32) bool) {
	for o, e := range s.octs {
		j := int(e.start)
		for has := e.has; has != 0; has &= has - 1 {
			if !fn((s.oct0+o)<<histSubBits+bits.TrailingZeros64(has), s.counts[j]) {
				return
			}
			j++
		}
	}
}

// quantile p (0-100) from the histogram: the bucket holding the sample of
// that rank (metrics.Percentile's rank, rounded).
func (s *rttStats) quantile(p float64) float64 {
	rank := int64(math.Round(float64(s.n-1) * p / 100))
	var seen int64
	v := float64(s.max)
	s.each(func(b int, n uint32) bool {
		seen += int64(n)
		if seen > rank {
			v = min(max(histValue(b), float64(s.min)), float64(s.max))
			return false
		}
		return true
	})
	return v
}

func (s *rttStats) summary() model.RTTSummary {
	r := model.RTTSummary{Samples: int(s.n), Rejected: int(s.rejected)}
	if s.n == 0 {
		return r
	}
	r.MinMs, r.MaxMs = float64(s.min)/1e6, float64(s.max)/1e6
	r.MeanMs = float64(s.sum) / float64(s.n) / 1e6
	if s.counts == nil {
		// The values in order (sorted in place: the buffer's order
		// means nothing), in ms on the stack.
		slices.Sort(s.exact)
		var buf [exactMax]float64
		ms := buf[:len(s.exact)]
		for i, v := range s.exact {
			ms[i] = float64(v) / 1e6
		}
		r.MedianMs = metrics.Percentile(ms, 50)
		r.P90Ms = metrics.Percentile(ms, 90)
		return r
	}
	s.fold()
	r.MedianMs = s.quantile(50) / 1e6
	r.P90Ms = s.quantile(90) / 1e6
	return r
}
