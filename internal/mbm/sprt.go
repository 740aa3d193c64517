package mbm

import (
	"fmt"
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// Decision is the state of an SPRT.
type Decision int

// The decisions: Continue until a line is crossed or the truncation point
// is reached.
const (
	Continue Decision = iota
	Pass
	Fail
	Inconclusive
)

func (d Decision) String() string {
	if d == Continue {
		return "CONTINUE"
	}
	return string(d.Verdict())
}

// Lines are Wald's SPRT lines for a Bernoulli mark rate (metrics.md §7):
// after n packets with m marks, PASS if m ≤ −H1 + S·n, FAIL if m ≥ H2 +
// S·n.
type Lines struct {
	K, S, H1, H2 float64
}

// NewLines computes the lines for H0: p ≤ p0 against H1: p ≥ p1 with
// error probabilities alpha (a false FAIL) and beta (a false PASS).
func NewLines(p0, p1, alpha, beta float64) (Lines, error) {
	switch {
	case !(p0 > 0 && p0 < p1 && p1 < 1):
		return Lines{}, fmt.Errorf("SPRT thresholds p0 = %g, p1 = %g: want 0 < p0 < p1 < 1", p0, p1)
	case !(alpha >= MinErrorProb && alpha <= MaxErrorProb):
		return Lines{}, fmt.Errorf("alpha %g: want %g to %g", alpha, MinErrorProb, MaxErrorProb)
	case !(beta >= MinErrorProb && beta <= MaxErrorProb):
		return Lines{}, fmt.Errorf("beta %g: want %g to %g", beta, MinErrorProb, MaxErrorProb)
	}
	// Log1p keeps ln(1−p) exact for the small p of long run lengths.
	lq := math.Log1p(-p0) - math.Log1p(-p1) // ln((1−p0)/(1−p1)) > 0
	k := math.Log(p1/p0) + lq               // ln(p1(1−p0) / (p0(1−p1)))
	return Lines{
		K:  k,
		S:  lq / k,
		H1: math.Log((1-alpha)/beta) / k,
		H2: math.Log((1-beta)/alpha) / k,
	}, nil
}

// PassLimit is the most marks after n packets that PASS.
func (l Lines) PassLimit(n int64) float64 { return -l.H1 + l.S*float64(n) }

// FailLimit is the fewest marks after n packets that FAIL.
func (l Lines) FailLimit(n int64) float64 { return l.H2 + l.S*float64(n) }

// CheapestPass is the fewest packets that can PASS: all delivered without
// a mark, n ≥ H1/S (≈ 0.98·R at α = β = 0.05).
func (l Lines) CheapestPass() int64 { return int64(math.Ceil(l.H1 / l.S)) }

// CheapestFail is the fewest packets (all marked) that can FAIL:
// m = n ≥ H2 + S·n, so n ≥ H2/(1 − S).
func (l Lines) CheapestFail() int64 { return int64(math.Ceil(l.H2 / (1 - l.S))) }

// SPRT is a per-packet sequential test of a path's mark rate (marks =
// losses + ECN CE). A test driver calls Observe once per packet whose fate
// is known; the decision is checked after every packet, as Wald's test
// requires (m-lab/mbm checked once a second). Not safe for concurrent use.
type SPRT struct {
	lines Lines
	floor int64 // no FAIL before this many packets
	max   int64 // INCONCLUSIVE at this many packets without a decision
	n, m  int64
	d     Decision
}

// NewSPRT starts a test with the given lines; floor (0: none) is the
// packets before which no FAIL is declared (seed 002 §4.4: early bursts of
// loss made false FAILs), max (> 0) the truncation point.
func NewSPRT(l Lines, floor, max int64) (*SPRT, error) {
	if max <= 0 || floor < 0 || floor > max {
		return nil, fmt.Errorf("SPRT sample sizes: floor %d, max %d: want 0 ≤ floor ≤ max, max > 0", floor, max)
	}
	return &SPRT{lines: l, floor: floor, max: max}, nil
}

// Observe counts one packet, marked if it was lost or arrived with ECN
// CE, and returns the decision. Once decided, further packets change
// nothing: the decision and the counts stay those at the stop.
func (s *SPRT) Observe(marked bool) Decision {
	if s.d != Continue {
		return s.d
	}
	s.n++
	if marked {
		s.m++
	}
	m := float64(s.m)
	switch {
	case m <= s.lines.PassLimit(s.n):
		s.d = Pass
	case s.n >= s.floor && m >= s.lines.FailLimit(s.n):
		s.d = Fail
	case s.n >= s.max:
		s.d = Inconclusive
	}
	return s.d
}

// Decision is the current decision.
func (s *SPRT) Decision() Decision { return s.d }

// Packets is n, the packets counted (up to the decision).
func (s *SPRT) Packets() int64 { return s.n }

// Marks is m, the marked packets counted (up to the decision).
func (s *SPRT) Marks() int64 { return s.m }

// Lines are the test's lines.
func (s *SPRT) Lines() Lines { return s.lines }

// Verdict is the decision as a saved result writes it; Continue, a test
// that never decided, is INCONCLUSIVE.
func (d Decision) Verdict() model.MBMVerdict {
	switch d {
	case Pass:
		return model.MBMPass
	case Fail:
		return model.MBMFail
	}
	return model.MBMInconclusive
}

// DecisionOf reads a saved verdict back: ERROR and anything unknown are
// undecided (Continue).
func DecisionOf(v model.MBMVerdict) Decision {
	switch v {
	case model.MBMPass:
		return Pass
	case model.MBMFail:
		return Fail
	case model.MBMInconclusive:
		return Inconclusive
	}
	return Continue
}
