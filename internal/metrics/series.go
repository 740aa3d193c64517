package metrics

import (
	"math"
	"sort"

	"github.com/sonde-project/sonde/internal/model"
)

// ByteCount is a cumulative byte count at time TS (seconds since the test
// start). A series of them is ordered by TS. It is the model's type, so
// series from the wire need no conversion.
type ByteCount = model.ByteCount

// Rates turns cumulative counts into the goodput of each interval between
// consecutive counts, stamped with the interval's end. Intervals that do
// not move forward in time, or in which the count goes backwards (a reset
// or a mixed-up series), are skipped rather than reported as nonsense.
func Rates(counts []ByteCount) []model.RatePoint {
	out := make([]model.RatePoint, 0, max(len(counts)-1, 0))
	for i := 1; i < len(counts); i++ {
		a, b := counts[i-1], counts[i]
		dt := b.TS - a.TS
		if !(dt > 0) || b.Bytes < a.Bytes {
			continue
		}
		out = append(out, model.RatePoint{TS: b.TS, Bps: float64(b.Bytes-a.Bytes) * 8 / dt})
	}
	return out
}

// BytesBetween is the number of bytes counted between t0 and t1: the
// cumulative count interpolated linearly at t1 minus that at t0, rounded to
// a byte. Outside the series the count is held at its first or last value,
// so nothing is extrapolated. 0 if t1 ≤ t0 or the series is empty.
func BytesBetween(counts []ByteCount, t0, t1 float64) int64 {
	if len(counts) == 0 || !(t1 > t0) {
		return 0
	}
	d := countAt(counts, t1) - countAt(counts, t0)
	if d <= 0 {
		return 0
	}
	return int64(math.Round(d))
}

// countAt is the cumulative count at t, linear between samples.
func countAt(counts []ByteCount, t float64) float64 {
	i := sort.Search(len(counts), func(i int) bool { return counts[i].TS >= t })
	switch {
	case i == 0:
		return float64(counts[0].Bytes)
	case i == len(counts):
		return float64(counts[len(counts)-1].Bytes)
	}
	a, b := counts[i-1], counts[i]
	if b.TS <= a.TS {
		return float64(b.Bytes)
	}
	f := (t - a.TS) / (b.TS - a.TS)
	return float64(a.Bytes) + f*float64(b.Bytes-a.Bytes)
}

// ValueAt interpolates a cumulative series at ts (clamped at its ends).
func ValueAt(c []ByteCount, ts float64) float64 {
	if len(c) == 0 {
		return 0
	}
	i := sort.Search(len(c), func(i int) bool { return c[i].TS >= ts })
	switch {
	case i == 0:
		return float64(c[0].Bytes)
	case i == len(c):
		return float64(c[len(c)-1].Bytes)
	}
	a, b := c[i-1], c[i]
	if b.TS == a.TS {
		return float64(b.Bytes)
	}
	// The fraction first: count × time could overflow on a huge span, and
	// the difference in floats: in int64 it could wrap.
	return float64(a.Bytes) + (float64(b.Bytes)-float64(a.Bytes))*((ts-a.TS)/(b.TS-a.TS))
}

// roundCount rounds a summed count to an int64, saturating instead of
// leaving the conversion of an out-of-range float undefined.
func roundCount(x float64) int64 {
	switch x = math.Round(x); {
	case x >= math.MaxInt64:
		return math.MaxInt64
	case x <= math.MinInt64:
		return math.MinInt64
	}
	return int64(x)
}

// MaxSeriesPoints bounds the points SumCounts and Resample return, whatever
// span and step they are given: a series' times may come from a client
// (the browser page's counts), and one point per step over a span of 1e9 s
// would exhaust memory. 65 536 points are 1.8 hours at 0.1 s.
const MaxSeriesPoints = 1 << 16

// SumCounts adds cumulative series on a common grid of the given step over
// their joint span. If the span holds more than MaxSeriesPoints steps, the
// step widens to span / (MaxSeriesPoints − 1) so the result stays within
// MaxSeriesPoints. Times that are not finite are skipped; a step that is
// not a positive finite number gives nil.
func SumCounts(series [][]ByteCount, step float64) []ByteCount {
	if !(step > 0) || math.IsInf(step, 0) {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range series {
		for _, p := range c {
			if isFiniteNum(p.TS) {
				lo, hi = math.Min(lo, p.TS), math.Max(hi, p.TS)
			}
		}
	}
	// NaN fails the first test; an infinite end or span (-1e308 to 1e308)
	// would make every step infinite.
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	if span := hi - lo; span/step > MaxSeriesPoints-1 {
		step = span / (MaxSeriesPoints - 1)
	}
	// The count is bounded above; the loop's own bound guards against
	// rounding that would otherwise need one more step to reach hi.
	out := make([]ByteCount, 0, min(int(math.Ceil((hi-lo)/step))+1, MaxSeriesPoints))
	for i := 0; i < MaxSeriesPoints; i++ {
		ts := math.Min(lo+float64(i)*step, hi)
		if i == MaxSeriesPoints-1 {
			ts = hi
		}
		var sum float64
		for _, c := range series {
			sum += ValueAt(c, ts)
		}
		out = append(out, ByteCount{TS: ts, Bytes: roundCount(sum)})
		if ts >= hi {
			break
		}
	}
	return out
}

// Resample thins a cumulative series to one point per step, at most
// MaxSeriesPoints points (see SumCounts). A series with no more points
// than that grid would have (and no more than MaxSeriesPoints) is returned
// as it is: resampling could only interpolate points between its own, so
// a sparse series (two counts a long span apart) cannot make it allocate
// more than it was given.
func Resample(c []ByteCount, step float64) []ByteCount {
	if len(c) < 2 {
		return c
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return nil
	}
	// A NaN or infinite span is SumCounts' to refuse.
	if span := c[len(c)-1].TS - c[0].TS; len(c) <= MaxSeriesPoints && span > 0 && !math.IsInf(span, 0) && span/step+1 >= float64(len(c)) {
		return c
	}
	return SumCounts([][]ByteCount{c}, step)
}
