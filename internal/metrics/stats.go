// Package metrics holds the pure computations behind sonde's TCP test
// report: sample statistics, the RFC 6349 figures, the end of slow start,
// responsiveness (RPM), rates from cumulative byte counts, and the assembly
// of per-flow and per-direction results. It does no I/O: inputs are numbers
// and model types, outputs are numbers and model types. The formulas are
// those of the project's metrics reference (metrics.md §1 and §5).
package metrics

import (
	"math"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// finiteSorted returns the finite values of xs in ascending order. NaN and
// ±Inf are dropped rather than rejected: a statistic of the remaining
// samples is still meaningful, and N reports how many were used.
func finiteSorted(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// Summarize describes a sample. Non-finite values (NaN, ±Inf) are dropped
// and not counted in N; an empty (or all non-finite) sample gives the zero
// Stats with N = 0. Percentiles use Percentile (linear interpolation between
// closest ranks); Stddev is the sample standard deviation (n−1 divisor),
// 0 for a single value (and MaxFloat64 if the spread of values near
// ±MaxFloat64 is too large to represent).
func Summarize(xs []float64) model.Stats {
	s := finiteSorted(xs)
	n := len(s)
	if n == 0 {
		return model.Stats{}
	}
	mean, sd := meanStddev(s)
	return model.Stats{
		N:      n,
		Min:    s[0],
		P10:    Percentile(s, 10),
		P50:    Percentile(s, 50),
		P90:    Percentile(s, 90),
		P99:    Percentile(s, 99),
		P999:   Percentile(s, 99.9),
		Max:    s[n-1],
		Mean:   mean,
		Stddev: sd,
	}
}

// meanStddev returns the mean and sample standard deviation of the sorted,
// finite, non-empty s. Values beyond ±1e100 are scaled down first so that
// neither the sum nor the squared deviations overflow.
func meanStddev(s []float64) (mean, sd float64) {
	n := float64(len(s))
	scale := math.Max(math.Abs(s[0]), math.Abs(s[len(s)-1]))
	if scale < 1e100 {
		scale = 1
	}
	var sum float64
	for _, x := range s {
		sum += x / scale
	}
	m := sum / n
	if len(s) > 1 {
		var ss float64
		for _, x := range s {
			d := x/scale - m
			ss += d * d
		}
		// A spread beyond MaxFloat64 is not representable; saturate.
		sd = math.Min(math.Sqrt(ss/(n-1))*scale, math.MaxFloat64)
	}
	// Rounding can put the mean a hair outside [min, max]; it never is.
	mean = math.Min(math.Max(m*scale, s[0]), s[len(s)-1])
	return mean, sd
}

// Percentile returns the p-th percentile (p in [0, 100], clamped; NaN is
// taken as 0) of an ascending, NaN-free sample, 0 if it is empty. It is the
// "linear interpolation between closest ranks" definition with C = 1 (type 7
// of Hyndman & Fan, the default of R, NumPy and Excel's PERCENTILE.INC):
// the rank h = (n−1)·p/100, and the value interpolates between the order
// statistics at floor(h) and ceil(h). p = 0 is the minimum, p = 100 the
// maximum, p = 50 the usual median.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if !(p > 0) { // also catches NaN
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	a, b := sorted[lo], sorted[lo+1]
	f := h - float64(lo)
	if a == b || f == 0 {
		return a
	}
	var v float64
	if d := b - a; !math.IsInf(d, 0) {
		v = a + f*d
	} else {
		// Halving is exact here and keeps b−a finite.
		v = 2 * (a/2 + f*(b/2-a/2))
	}
	return math.Min(math.Max(v, a), b)
}

// TrimmedMean is the two-sided trimmed mean: the mean after dropping
// floor(trimFrac·n) of the smallest and as many of the largest finite
// values (0.05 drops 5% at each end). trimFrac is clamped to [0, 0.5); if
// trimming would leave nothing, the median is returned. Non-finite values
// are dropped; an empty sample gives 0.
func TrimmedMean(xs []float64, trimFrac float64) float64 {
	s := finiteSorted(xs)
	n := len(s)
	if n == 0 {
		return 0
	}
	if !(trimFrac > 0) {
		trimFrac = 0
	}
	k := int(math.Floor(math.Min(trimFrac, 0.5) * float64(n)))
	if 2*k >= n {
		return Percentile(s, 50)
	}
	m, _ := meanStddev(s[k : n-k])
	return m
}

// TrimmedMeanTop is the single-sided trimmed mean of the IETF IPPM
// responsiveness draft (draft-ietf-ippm-responsiveness, "TM" with
// TMP = 95%): the mean of the finite values at or below the
// (100·(1−topFrac))-th Percentile, so TrimmedMeanTop(xs, 0.05) drops the
// values above the 95th percentile. Because the cut-off is an interpolated
// percentile, at least one value is always kept; ties with the cut-off are
// kept. topFrac is clamped to [0, 1] (1 keeps only the minimum); an empty
// sample gives 0.
func TrimmedMeanTop(xs []float64, topFrac float64) float64 {
	s := finiteSorted(xs)
	if len(s) == 0 {
		return 0
	}
	if !(topFrac > 0) {
		topFrac = 0
	}
	cut := Percentile(s, 100*(1-math.Min(topFrac, 1)))
	k, _ := slices.BinarySearch(s, math.Nextafter(cut, math.Inf(1)))
	if k == 0 { // cannot happen: cut ≥ s[0]; kept for safety
		k = 1
	}
	m, _ := meanStddev(s[:k])
	return m
}

// mean is the arithmetic mean of finite values, 0 for none.
func mean(xs []float64) float64 {
	s := finiteSorted(xs)
	if len(s) == 0 {
		return 0
	}
	m, _ := meanStddev(s)
	return m
}
