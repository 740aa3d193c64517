package reliability

import (
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// The delay histogram's fixed bins: bin 0 holds delays below histMinNs,
// bin i (1 ≤ i ≤ histLogBins) holds [histMinNs·r^(i−1), histMinNs·r^i)
// with r = 1.02, the last bin everything from 1000 s up. A 2 % wide bin
// read at its geometric middle is within 1 % of any value in it, which
// is the accuracy the rollups promise for percentiles; 1049 bins cover
// 1 µs to 1000 s (longer than any timeout or requirement profile).
const (
	histMinNs   = 1000
	histRatio   = 1.02
	histLogBins = 1047 // ceil(ln(1e9)/ln(1.02))
	// NumBins is the number of histogram bins, underflow and overflow included.
	NumBins = histLogBins + 2
)

var (
	lnRatio = math.Log(histRatio)
	// binEdges[i] is the lower edge of bin i+1 (ns): bin b holds
	// [binEdges[b−1], binEdges[b]). Computed once, read-only.
	binEdges = func() []int64 {
		e := make([]int64, histLogBins+1)
		for i := range e {
			e[i] = int64(math.Ceil(histMinNs * math.Pow(histRatio, float64(i))))
		}
		return e
	}()
	// lnMant[k] is ln(1 + k/4096): the natural log of a mantissa's top 12
	// bits, for BinOf's first guess. Read-only.
	lnMant = func() []float64 {
		t := make([]float64, 4096)
		for k := range t {
			t[k] = math.Log1p(float64(k) / 4096)
		}
		return t
	}()
)

// BinOf returns the histogram bin of a delay in ns. It guesses the bin
// from the float's exponent and a table of mantissa logs (math.Log was
// most of a report's time) and settles it against the exact edges.
func BinOf(ns int64) int {
	if ns < histMinNs {
		return 0
	}
	if ns >= binEdges[histLogBins] {
		return histLogBins + 1
	}
	bits := math.Float64bits(float64(ns) / histMinNs)
	lg := float64(int(bits>>52&0x7ff)-1023)*math.Ln2 + lnMant[bits>>40&0xfff]
	b := min(max(int(lg/lnRatio)+1, 1), histLogBins)
	for b > 1 && ns < binEdges[b-1] {
		b--
	}
	for b < histLogBins && ns >= binEdges[b] {
		b++
	}
	return b
}

// BinUpperNs is the exclusive upper edge of bin b (math.MaxInt64 for the last).
func BinUpperNs(b int) int64 {
	if b <= 0 {
		return histMinNs
	}
	if b > histLogBins {
		return math.MaxInt64
	}
	return binEdges[b]
}

// binMidNs is the value a bin stands for: its geometric middle.
func binMidNs(b int) int64 {
	if b <= 0 {
		return histMinNs / 2
	}
	if b > histLogBins {
		b = histLogBins + 1
	}
	return int64(histMinNs * math.Pow(histRatio, float64(b)-0.5))
}

// hist is a dense histogram with the moments and extremes a summary needs.
type hist struct {
	bins       []uint64 // nil until the first value
	n          uint64
	sum, sumSq float64
	min, max   int64
}

func (h *hist) add(ns int64) {
	if h.bins == nil {
		h.bins = make([]uint64, NumBins)
	}
	h.bins[BinOf(ns)]++
	h.addMoments(1, float64(ns), float64(ns)*float64(ns), ns, ns)
}

func (h *hist) addMoments(n uint64, sum, sumSq float64, lo, hi int64) {
	if n == 0 {
		return
	}
	if h.n == 0 || lo < h.min {
		h.min = lo
	}
	if h.n == 0 || hi > h.max {
		h.max = hi
	}
	h.n += n
	h.sum += sum
	h.sumSq += sumSq
}

// addBins merges sparse rollup bins (bin numbers out of range are dropped:
// a corrupt row must not panic a report).
func (h *hist) addBins(bs []model.RollupBin) uint64 {
	if h.bins == nil {
		h.bins = make([]uint64, NumBins)
	}
	var n uint64
	for _, b := range bs {
		if int(b.Bin) < NumBins {
			h.bins[b.Bin] += uint64(b.N)
			n += uint64(b.N)
		}
	}
	return n
}

// quantile is the nearest-rank p-quantile (0 < p ≤ 1) read from the bins,
// clamped to the exact extremes.
func (h *hist) quantile(p float64) int64 {
	var total uint64
	for _, c := range h.bins {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p * float64(total)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for b, c := range h.bins {
		cum += c
		if cum >= rank {
			v := binMidNs(b)
			if h.n > 0 {
				v = min(max(v, h.min), h.max)
			}
			return v
		}
	}
	return h.max
}

// countLE approximates how many values are ≤ l: whole bins below l, and
// the bin holding l when its middle is ≤ l (off by at most that bin).
func (h *hist) countLE(l int64) uint64 {
	var c uint64
	for b, n := range h.bins {
		if BinUpperNs(b) <= l+1 || (BinOf(l) == b && binMidNs(b) <= l) {
			c += n
		} else if b > BinOf(l) {
			break
		}
	}
	return c
}

func (h *hist) meanSD() (mean, sd float64) {
	if h.n == 0 {
		return 0, 0
	}
	mean = h.sum / float64(h.n)
	if h.n > 1 {
		v := (h.sumSq - h.sum*mean) / float64(h.n-1)
		if v > 0 {
			sd = math.Sqrt(v)
		}
	}
	return mean, sd
}

// stats summarises the histogram (percentiles approximate).
func (h *hist) stats() model.DelayStats {
	mean, sd := h.meanSD()
	if h.n == 0 {
		return model.DelayStats{}
	}
	return model.DelayStats{
		N: h.n, MeanNs: mean, SDNs: sd, MinNs: h.min, MaxNs: h.max,
		P1Ns: h.quantile(0.01), P5Ns: h.quantile(0.05), P25Ns: h.quantile(0.25),
		P50Ns: h.quantile(0.50), P75Ns: h.quantile(0.75), P95Ns: h.quantile(0.95),
		P99Ns: h.quantile(0.99), P999Ns: h.quantile(0.999), Approx: true,
	}
}

// exactStats replaces the histogram's percentiles by nearest-rank ones of
// the raw values vs (len(vs) == h.n), sorted or at least ordered at
// exactQuantiles' ranks (orderForQuantiles).
func exactStats(h *hist, vs []int64) model.DelayStats {
	st := h.stats()
	if len(vs) == 0 || uint64(len(vs)) != h.n {
		return st
	}
	var q [len(exactQuantiles)]int64
	for i, p := range exactQuantiles {
		q[i] = vs[nearestRankIndex(len(vs), p)]
	}
	st.P1Ns, st.P5Ns, st.P25Ns, st.P50Ns = q[0], q[1], q[2], q[3]
	st.P75Ns, st.P95Ns, st.P99Ns, st.P999Ns = q[4], q[5], q[6], q[7]
	st.Approx = false
	return st
}

// nearestRank is the p-quantile of sorted vs: the ⌈p·n⌉-th value.
func nearestRank[T any](vs []T, p float64) T {
	return vs[nearestRankIndex(len(vs), p)]
}

// binStats summarises a histogram filled from bins only (one-way delays
// of rollups): every figure, mean and SD included, is read from the bins'
// middles.
func (h *hist) binStats() model.DelayStats {
	var b hist
	for i, c := range h.bins {
		if c > 0 {
			v := float64(binMidNs(i))
			b.addMoments(c, v*float64(c), v*v*float64(c), binMidNs(i), binMidNs(i))
		}
	}
	b.bins = h.bins
	return b.stats()
}
