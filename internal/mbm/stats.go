package mbm

import (
	"fmt"
	"math"
)

// Wilson is the Wilson score interval (95 %, z = 1.96) of a mark rate from
// m marks in n packets. An SPRT stops when the walk is at an extreme, so
// m/n at the stop is biased; the interval says how far the data allow.
func Wilson(m, n int64) (lo, hi float64) {
	if n <= 0 || m < 0 || m > n {
		return 0, 1
	}
	const z = 1.959963984540054
	nf, p := float64(n), float64(m)/float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return math.Max(0, c-h), math.Min(1, c+h)
}

// ComposeLoss is the loss of a path of independent subpaths:
// 1 − Π(1 − p_i) (RFC 6049, metrics.md §7).
func ComposeLoss(ps []float64) float64 {
	keep := 1.0
	for _, p := range ps {
		keep *= 1 - p
	}
	return 1 - keep
}

// EqualBudgets splits a path's p0 over k subpaths so that Π(1 − b) =
// 1 − p0 exactly: b = 1 − (1 − p0)^(1/k).
func EqualBudgets(p0 float64, k int) ([]float64, error) {
	if !(p0 > 0 && p0 < 1) || k < 1 || k > MaxSubpaths {
		return nil, fmt.Errorf("loss budgets: p0 %g over %d subpaths: want 0 < p0 < 1 and 1 to %d subpaths", p0, k, MaxSubpaths)
	}
	b := -math.Expm1(math.Log1p(-p0) / float64(k))
	out := make([]float64, k)
	for i := range out {
		out[i] = b
	}
	return out, nil
}

// MaxSubpaths bounds a composition.
const MaxSubpaths = 64

// BudgetsFit tells whether budgets b_i keep the path within its p0:
// Π(1 − b_i) ≥ 1 − p0 (with a relative tolerance for rounding in saved
// results).
func BudgetsFit(p0 float64, budgets []float64) bool {
	keep := 1.0
	for _, b := range budgets {
		keep *= 1 - b
	}
	return keep >= (1-p0)*(1-1e-12)
}

// Subpath is one subpath's outcome, for Compose.
type Subpath struct {
	Decision Decision
	Budget   float64 // the p0 its test used
	Packets  int64
	Marks    int64
}

// Composed is a path's verdict from its subpaths.
type Composed struct {
	Decision Decision
	Reason   string
	// Loss is 1 − Π(1 − m_i/n_i); LossLow and LossHigh compose the
	// subpaths' Wilson bounds the same way (bounds, not a 95 % interval
	// of their own).
	Loss, LossLow, LossHigh float64
}

// Compose gives the path's verdict for a target whose p0 is pathP0:
// PASS when every subpath PASSed within budgets that fit (Π(1 − b_i) ≥
// 1 − p0); FAIL when a subpath FAILed its budget (that split of the path's
// loss does not hold); INCONCLUSIVE when a subpath did not decide or the
// budgets do not fit.
func Compose(pathP0 float64, subs []Subpath) (Composed, error) {
	if len(subs) == 0 || len(subs) > MaxSubpaths {
		return Composed{}, fmt.Errorf("compose: %d subpaths: want 1 to %d", len(subs), MaxSubpaths)
	}
	var c Composed
	var loss, lo, hi, budgets []float64
	undecided, failed := -1, -1
	for i, s := range subs {
		if s.Packets < 0 || s.Marks < 0 || s.Marks > s.Packets {
			return Composed{}, fmt.Errorf("compose: subpath %d: %d marks in %d packets", i+1, s.Marks, s.Packets)
		}
		if !(s.Budget > 0 && s.Budget < 1) {
			return Composed{}, fmt.Errorf("compose: subpath %d: budget %g: want 0 < b < 1", i+1, s.Budget)
		}
		budgets = append(budgets, s.Budget)
		l, h := Wilson(s.Marks, s.Packets)
		p := 0.0
		if s.Packets > 0 {
			p = float64(s.Marks) / float64(s.Packets)
		}
		loss, lo, hi = append(loss, p), append(lo, l), append(hi, h)
		switch s.Decision {
		case Fail:
			if failed < 0 {
				failed = i
			}
		case Pass:
		default:
			if undecided < 0 {
				undecided = i
			}
		}
	}
	c.Loss, c.LossLow, c.LossHigh = ComposeLoss(loss), ComposeLoss(lo), ComposeLoss(hi)
	switch {
	case failed >= 0:
		c.Decision = Fail
		c.Reason = fmt.Sprintf("subpath %d FAILed its loss budget %.4g", failed+1, subs[failed].Budget)
	case !BudgetsFit(pathP0, budgets):
		c.Decision = Inconclusive
		c.Reason = fmt.Sprintf("the budgets do not fit the path: Π(1 − b_i) < 1 − p0 = 1 − %.4g", pathP0)
	case undecided >= 0:
		c.Decision = Inconclusive
		c.Reason = fmt.Sprintf("subpath %d did not decide (%s)", undecided+1, subs[undecided].Decision)
	default:
		c.Decision = Pass
		c.Reason = fmt.Sprintf("every subpath PASSed within budgets that fit p0 = %.4g", pathP0)
	}
	return c, nil
}

// LeastWindow is the least sum of k consecutive bins (bytes per time bin):
// the least rate over a sliding window of k bins, which the rate
// precondition (docs/mbm.md) checks on both sides: the sender's schedule
// and the receiver's arrivals. ok is false when bins
// hold no more than one window (k ≤ 0, or len(bins) ≤ k): then the whole
// span is the only window.
func LeastWindow(bins []int64, k int) (least int64, ok bool) {
	if k <= 0 || len(bins) <= k {
		return 0, false
	}
	var sum int64
	for _, b := range bins[:k] {
		sum += b
	}
	least = sum
	for i := k; i < len(bins); i++ {
		sum += bins[i] - bins[i-k]
		least = min(least, sum)
	}
	return least, true
}
