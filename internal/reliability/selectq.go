package reliability

import (
	"math"
	"math/bits"
	"slices"
)

// exactQuantiles are the percentiles exactStats reads from raw values.
var exactQuantiles = [...]float64{0.01, 0.05, 0.25, 0.50, 0.75, 0.95, 0.99, 0.999}

// orderForQuantiles reorders vs so that each of exactQuantiles' nearest
// ranks holds the value a full sort would put there, which is all
// exactStats reads. It is a multi-way quickselect, O(n log k) for k ranks
// instead of the sort's O(n log n): the daemon's detectors report over
// their window every 10 s, and sorting every RTT of it was a fifth of
// the daemon's loop. The rest of vs is left partly ordered.
func orderForQuantiles(vs []int64) {
	if len(vs) < 2 {
		return
	}
	var ranks [len(exactQuantiles)]int
	for i, p := range exactQuantiles {
		ranks[i] = nearestRankIndex(len(vs), p)
	}
	// Ranks are ascending (the quantiles are); equal ones are harmless.
	// The depth bound makes a run of bad pivots fall back to sorting the
	// part, so no input is quadratic.
	multiSelect(vs, 0, ranks[:], 2*bits.Len(uint(len(vs))))
}

// multiSelect puts the values of the absolute ranks (ascending, each in
// [off, off+len(vs))) in place within vs, whose first value has rank off.
func multiSelect(vs []int64, off int, ranks []int, depth int) {
	for len(ranks) > 0 {
		if len(vs) <= 16 || depth == 0 {
			slices.Sort(vs)
			return
		}
		depth--
		p := medianOf3(vs[0], vs[len(vs)/2], vs[len(vs)-1])
		// Three-way partition: [0,lt) < p, [lt,gt) == p, [gt,n) > p,
		// so runs of equal values (common: RTTs in whole µs) end it fast.
		lt, i, gt := 0, 0, len(vs)
		for i < gt {
			switch v := vs[i]; {
			case v < p:
				vs[lt], vs[i] = vs[i], vs[lt]
				lt++
				i++
			case v > p:
				gt--
				vs[gt], vs[i] = vs[i], vs[gt]
			default:
				i++
			}
		}
		a := lowerBound(ranks, off+lt) // ranks[:a] are left of the pivots
		b := lowerBound(ranks, off+gt) // ranks[a:b] fall on them: done
		multiSelect(vs[:lt], off, ranks[:a], depth)
		// Loop on the right part rather than recurse.
		vs, off, ranks = vs[gt:], off+gt, ranks[b:]
	}
}

func lowerBound(ranks []int, x int) int {
	i, _ := slices.BinarySearch(ranks, x)
	return i
}

func medianOf3(a, b, c int64) int64 {
	if a > b {
		a, b = b, a
	}
	if b > c {
		b = c
	}
	return max(a, b)
}

// nearestRankIndex is the index of the p-quantile in n sorted values: the
// ⌈p·n⌉-th value, as nearestRank reads it.
func nearestRankIndex(n int, p float64) int {
	r := int(math.Ceil(p * float64(n)))
	return min(max(r, 1), n) - 1
}
