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
	return float64(a.Bytes) + float64(b.Bytes-a.Bytes)*(ts-a.TS)/(b.TS-a.TS)
}

// MaxSeriesPoints bounds the points SumCounts and Resample produce: a
// series' span comes from timestamps a client or a file supplies, and a
// tiny step over a long span must not allocate without limit.
const MaxSeriesPoints = 100000

// SumCounts adds cumulative series on a common grid of the given step over
// their joint span (of finite timestamps). A step that is not positive, or
// that would give more than MaxSeriesPoints points, is widened to span /
// MaxSeriesPoints.
func SumCounts(series [][]ByteCount, step float64) []ByteCount {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range series {
		for _, p := range c {
			if isFiniteNum(p.TS) {
				lo, hi = math.Min(lo, p.TS), math.Max(hi, p.TS)
			}
		}
	}
	if !(hi > lo) {
		return nil
	}
	span := hi - lo // may be +Inf for timestamps near ±MaxFloat64
	if !(step > 0) || !(span/step <= MaxSeriesPoints) {
		step = span / MaxSeriesPoints
	}
	var out []ByteCount
	// Rounding can keep lo + i·step from reaching hi; the count bound
	// ends the grid at hi regardless.
	for i := 0; ; i++ {
		ts := math.Min(lo+float64(i)*step, hi)
		if i >= MaxSeriesPoints {
			ts = hi
		}
		var sum float64
		for _, c := range series {
			sum += ValueAt(c, ts)
		}
		out = append(out, ByteCount{TS: ts, Bytes: int64(math.Round(sum))})
		if ts >= hi {
			return out
		}
	}
}

// Resample thins a cumulative series to one point per step (bounded as in
// SumCounts).
func Resample(c []ByteCount, step float64) []ByteCount {
	if len(c) < 2 {
		return c
	}
	return SumCounts([][]ByteCount{c}, step)
}
