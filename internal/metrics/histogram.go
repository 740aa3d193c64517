package metrics

import (
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// MaxHistogramBins bounds the bins one histogram may have, whatever the
// caller asks for: a histogram is for reading, and its size must not follow
// a count that came from a flag or a file.
const MaxHistogramBins = 10000

// Histogram bins the finite values of xs into at most maxBins bins of equal,
// "nice" width (1, 2 or 5 times a power of ten) aligned to multiples of the
// width, so histograms of similar runs line up. An empty sample gives nil;
// maxBins < 1 is taken as 1 and more than MaxHistogramBins as that many.
// Every finite value lands in exactly one bin, also for a constant sample,
// a single value, or values near ±MaxFloat64; the bin edges are finite.
func Histogram(xs []float64, maxBins int) []model.HistBin {
	s := finiteSorted(xs)
	if len(s) == 0 {
		return nil
	}
	maxBins = min(max(maxBins, 1), MaxHistogramBins)
	lo, hi := s[0], s[len(s)-1]
	start, width, n, ok := niceGrid(lo, hi, maxBins)
	if !ok {
		// The span is too wide for equal nice bins in float64 (values
		// near ±MaxFloat64): one bin holds the whole sample.
		return []model.HistBin{{Lo: lo, Hi: hi, Count: len(s)}}
	}
	bins := make([]model.HistBin, n)
	for i := range bins {
		bins[i].Lo = start + float64(i)*width
		bins[i].Hi = start + float64(i+1)*width
	}
	last := float64(n - 1)
	for _, x := range s {
		// Clamp in float64 before converting: rounding can put a value a
		// hair outside the grid, and converting a float beyond int's range
		// is undefined.
		f := math.Floor((x - start) / width)
		if !(f > 0) {
			f = 0
		}
		bins[int(math.Min(f, last))].Count++
	}
	return bins
}

// niceGrid finds the nice width and the aligned start of at most maxBins
// bins that cover [lo, hi]. ok is false when no such grid is representable.
func niceGrid(lo, hi float64, maxBins int) (start, width float64, n int, ok bool) {
	span := hi - lo
	if math.IsInf(span, 0) {
		return 0, 0, 0, false
	}
	// A constant sample has span 0; the width must still be wide enough to
	// move a value of this magnitude, else every edge would be equal.
	mag := math.Max(math.Abs(lo), math.Abs(hi))
	minWidth := math.Max(1e-9, 4*(math.Nextafter(mag, math.Inf(1))-mag))
	width = niceWidth(math.Max(span/float64(maxBins), minWidth))
	// Each step moves to the next nice width (×2 or ×2.5), so a grid that
	// exists is found in a few steps; the bound only guards the loop.
	for range 64 {
		if math.IsInf(width, 0) {
			return 0, 0, 0, false
		}
		start = math.Floor(lo/width) * width
		if start > lo { // rounding of lo/width
			start -= width
		}
		nf := math.Floor((hi-start)/width) + 1
		if nf >= 1 && nf <= float64(maxBins) && !math.IsInf(start+nf*width, 0) {
			return start, width, int(nf), true
		}
		width = niceWidth(width * 1.01)
	}
	return 0, 0, 0, false
}

// niceWidth returns the smallest 1, 2 or 5 × 10^k that is ≥ w (w ≤ 0 or
// tiny gives 1e-9); +Inf when no such width is finite.
func niceWidth(w float64) float64 {
	if !(w > 1e-12) {
		return 1e-9
	}
	if math.IsInf(w, 0) {
		return w
	}
	p := math.Pow(10, math.Floor(math.Log10(w)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= w {
			return m * p
		}
	}
	return 10 * p
}
