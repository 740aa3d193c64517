package reliability

import "math"

// z95 is the standard normal quantile of a two-sided 95 % interval.
const z95 = 1.959963984540054

// Bounds returns the 95 % confidence interval of a proportion ok/n: the
// Wilson score interval, except that with no failure the lower end is the
// rule of three, 1 − 3/n (metrics.md §6), which is the one-sided 95 % bound
// for zero events and what seed 001 reports. n = 0 gives [0, 1].
func Bounds(ok, n uint64) (lower, upper float64) {
	if n == 0 {
		return 0, 1
	}
	if ok > n {
		ok = n
	}
	fn := float64(n)
	p := float64(ok) / fn
	z2 := z95 * z95
	den := 1 + z2/fn
	centre := p + z2/(2*fn)
	half := z95 * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn))
	lower = (centre - half) / den
	upper = (centre + half) / den
	if ok == n {
		lower, upper = 1-3/fn, 1
	}
	return max(lower, 0), min(upper, 1)
}
