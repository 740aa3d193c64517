package mbm

import (
	"fmt"
	"math"
	"time"
)

// Inputs are everything a test's statistics depend on; a result records
// them all so that it can be repeated (RFC 8337's FS-TIDS idea).
type Inputs struct {
	Target
	// Model names the run-length model that sets p0 and p1
	// (ModelReference by default: RFC 8337's normative one).
	Model string
	// Alpha is the probability of a false FAIL at p0, Beta of a false
	// PASS at p1.
	Alpha, Beta float64
	// FloorPackets (0: none) is the packets before which no FAIL is
	// declared.
	FloorPackets int64
	// TruncFactor sets the truncation point as a multiple of the
	// largest average sample number (DefaultTruncFactor if 0).
	TruncFactor float64
	// Budget (0: none) is this subpath's share of the path's loss: the
	// test's p0 is Budget instead of 1/R (composition, metrics.md §7).
	Budget float64
}

// ModelRunLength is one model's R for the target and its ratio to the
// reference 3W².
type ModelRunLength struct {
	Model   string
	About   string
	Packets float64
	Ratio   float64
}

// Plan is what a test will do, computed before any packet: the model, the
// thresholds, the SPRT lines and what a decision is expected to cost.
type Plan struct {
	Inputs
	W int64
	// R is the run length of Inputs.Model; P0 = 1/R (or the budget),
	// P1 = 4·P0.
	R, P0, P1 float64
	Models    []ModelRunLength
	Lines     Lines
	// MaxPackets is the truncation point: ceil(TruncFactor × MaxASN),
	// or TruncFactor × the cheapest PASS if that is larger. Wald's
	// average sample number is largest at p = S, so a test that has not
	// decided by then is INCONCLUSIVE rather than running on.
	MaxPackets int64
	// Expected packets to a decision (Wald's approximation, without
	// truncation or floor): at p0, p1, the worst case, and the cheapest
	// PASS (no mark at all) and FAIL (every packet marked).
	ASNAtP0, ASNAtP1, MaxASN   float64
	CheapestPass, CheapestFail int64
}

// NewPlan checks the inputs and computes the plan. An error is one line
// that says which input is wrong and why.
func NewPlan(in Inputs) (Plan, error) {
	if in.Model == "" {
		in.Model = ModelReference
	}
	if in.TruncFactor == 0 {
		in.TruncFactor = DefaultTruncFactor
	}
	if !(in.TruncFactor >= MinTrunc && in.TruncFactor <= MaxTrunc) {
		return Plan{}, fmt.Errorf("truncation factor %g: want %d to %d", in.TruncFactor, MinTrunc, MaxTrunc)
	}
	model, err := Model(in.Model)
	if err != nil {
		return Plan{}, err
	}
	w, err := in.Target.Window()
	if err != nil {
		return Plan{}, err
	}
	p := Plan{Inputs: in, W: w}
	ref := Models[0].RunLength(w, in.RTT)
	for _, m := range Models {
		r := m.RunLength(w, in.RTT)
		p.Models = append(p.Models, ModelRunLength{m.Name, m.About, r, r / ref})
	}
	p.R = model.RunLength(w, in.RTT)
	if !(p.R > 4) {
		return Plan{}, fmt.Errorf("%w: R = %.4g packets (model %s, W = %d) is at most 4, so p1 = 4/R ≥ 1 and no loss rate could FAIL: raise the target rate or RTT", ErrRunLength, p.R, model.Name, w)
	}
	p.P0 = 1 / p.R
	if in.Budget != 0 {
		if !(in.Budget > 0 && in.Budget <= p.P0) {
			return Plan{}, fmt.Errorf("loss budget %g: want more than 0 and at most the path's p0 = 1/R = %.4g", in.Budget, p.P0)
		}
		p.P0 = in.Budget
	}
	p.P1 = 4 * p.P0
	if p.Lines, err = NewLines(p.P0, p.P1, in.Alpha, in.Beta); err != nil {
		return Plan{}, err
	}
	p.MaxASN = p.Lines.MaxASN()
	// With very unequal α and β the worst average can be below the
	// cheapest PASS (H1/S): never truncate before a PASS is possible.
	maxN := math.Ceil(in.TruncFactor * math.Max(p.MaxASN, p.Lines.H1/p.Lines.S))
	if maxN > math.MaxInt64/4 {
		return Plan{}, fmt.Errorf("truncation point %.3g packets: too large to count", maxN)
	}
	p.MaxPackets = int64(maxN)
	if in.FloorPackets < 0 || in.FloorPackets > p.MaxPackets {
		return Plan{}, fmt.Errorf("sample floor %d packets: want 0 to the truncation point %d", in.FloorPackets, p.MaxPackets)
	}
	p.ASNAtP0, p.ASNAtP1 = p.Lines.ASN(p.P0), p.Lines.ASN(p.P1)
	p.CheapestPass, p.CheapestFail = p.Lines.CheapestPass(), p.Lines.CheapestFail()
	return p, nil
}

// NewSPRT starts the plan's test.
func (p Plan) NewSPRT() *SPRT {
	s, err := NewSPRT(p.Lines, p.FloorPackets, p.MaxPackets)
	if err != nil {
		panic("mbm: a checked plan gave a bad SPRT: " + err.Error()) // NewPlan bounds both
	}
	return s
}

// Duration is how long n packets of the target's MTU take at its rate.
func (t Target) Duration(n float64) time.Duration {
	s := n * float64(t.MTU) * 8 / t.RateBps
	if s > float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * 1e9)
}
