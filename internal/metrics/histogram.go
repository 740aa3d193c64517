package metrics

import (
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// Histogram bins the finite values of xs into at most maxBins bins of equal,
// "nice" width (1, 2 or 5 times a power of ten) aligned to multiples of the
// width, so histograms of similar runs line up. An empty sample gives nil;
// maxBins < 1 is taken as 1.
func Histogram(xs []float64, maxBins int) []model.HistBin {
	s := finiteSorted(xs)
	if len(s) == 0 {
		return nil
	}
	maxBins = max(maxBins, 1)
	lo, hi := s[0], s[len(s)-1]
	width := niceWidth((hi - lo) / float64(maxBins))
	start := math.Floor(lo/width) * width
	n := int(math.Floor((hi-start)/width)) + 1
	for n > maxBins { // rounding at the edges can add a bin
		width = niceWidth(width * 1.01)
		start = math.Floor(lo/width) * width
		n = int(math.Floor((hi-start)/width)) + 1
	}
	bins := make([]model.HistBin, n)
	for i := range bins {
		bins[i].Lo = start + float64(i)*width
		bins[i].Hi = start + float64(i+1)*width
	}
	for _, x := range s {
		i := min(int(math.Floor((x-start)/width)), n-1)
		bins[max(i, 0)].Count++
	}
	return bins
}

// niceWidth returns the smallest 1, 2 or 5 × 10^k that is ≥ w (w ≤ 0 or
// tiny gives a width that still makes one bin of a constant sample).
func niceWidth(w float64) float64 {
	if !(w > 1e-12) || math.IsInf(w, 0) {
		return 1e-9
	}
	p := math.Pow(10, math.Floor(math.Log10(w)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= w {
			return m * p
		}
	}
	return 10 * p
}
