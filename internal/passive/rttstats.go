package passive

import (
	"math"
	"slices"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
)

// rttStats summarises one method's samples of one flow in bounded memory:
// running count, sum, min and max; for the quantiles the first exactMax
// values exactly, and beyond that a fixed log-linear histogram. So the
// default output needs memory per live flow, not per sample. Values are
// folded into the histogram exactMax at a time: the per-sample path then
// appends to a small buffer instead of touching a random histogram line.
type rttStats struct {
	n, rejected uint32
	sum         int64 // ns
	min, max    int64
	exact       []int64   // the values not yet in hist
	hist        []histBin // sparse, by bucket; nil while every value is in exact
}

// histBin is a non-empty histogram bucket. A flow's RTTs span few of the
// buckets, so the sparse list is a few hundred bytes where the dense
// histogram would take 6.6 kB (it is bounded by histBuckets all the same).
type histBin struct {
	idx uint16
	n   uint32
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

// fold moves the buffered values into the histogram.
func (s *rttStats) fold() {
	var buf [exactMax]uint16
	idx := buf[:len(s.exact)]
	for i, v := range s.exact {
		idx[i] = uint16(histBucket(v))
	}
	s.exact = s.exact[:0]
	slices.Sort(idx)
	// Count what already has a bin; gather the new buckets.
	var fresh [exactMax]histBin
	nf := 0
	for i := 0; i < len(idx); {
		j := i + 1
		for j < len(idx) && idx[j] == idx[i] {
			j++
		}
		k, found := slices.BinarySearchFunc(s.hist, idx[i], func(b histBin, x uint16) int { return int(b.idx) - int(x) })
		if found {
			s.hist[k].n += uint32(j - i)
		} else {
			fresh[nf] = histBin{idx[i], uint32(j - i)}
			nf++
		}
		i = j
	}
	if nf == 0 {
		return
	}
	// Merge the new bins in from the back.
	old := len(s.hist)
	s.hist = slices.Grow(s.hist, nf)[:old+nf]
	i, j := old-1, nf-1
	for w := old + nf - 1; j >= 0; w-- {
		if i >= 0 && s.hist[i].idx > fresh[j].idx {
			s.hist[w] = s.hist[i]
			i--
		} else {
			s.hist[w] = fresh[j]
			j--
		}
	}
}

// quantile p (0-100) from the histogram: the bucket holding the sample of
// that rank (metrics.Percentile's rank, rounded).
func (s *rttStats) quantile(p float64) float64 {
	rank := int64(math.Round(float64(s.n-1) * p / 100))
	var seen int64
	for _, b := range s.hist {
		seen += int64(b.n)
		if seen > rank {
			return min(max(histValue(int(b.idx)), float64(s.min)), float64(s.max))
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

// summarize describes a list of samples (valid ones; invalid ones are
// counted).
func summarize(ss []*sample) model.RTTSummary {
	var st rttStats
	for _, s := range ss {
		st.add(s.rtt, s.flag == "")
	}
	return st.summary()
}
