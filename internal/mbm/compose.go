package mbm

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/model"
)

// ComposeResults composes saved per-subpath results (names[i] is where
// rs[i] was read from) into a path's verdict per test: every test the
// first result holds, composed by Compose; a test missing from another
// subpath is composed as INCONCLUSIVE. The results must share one target
// and path p0 (the caller checks: it names the files).
func ComposeResults(names []string, rs []model.MBMResult) (model.MBMComposition, error) {
	c := model.MBMComposition{Schema: model.MBMComposeSchemaVersion, Target: rs[0].Target, PathP0: rs[0].Model.PathP0}
	for i, r := range rs {
		name := names[i]
		if r.Subpath != "" {
			name += " (" + r.Subpath + ")"
		}
		c.Inputs = append(c.Inputs, name)
	}
	for _, t0 := range rs[0].Tests {
		var subs []Subpath
		var budgets []float64
		missing := ""
		for i, r := range rs {
			t, ok := findTest(r, t0.ID)
			if !ok {
				missing = names[i]
				break
			}
			subs = append(subs, Subpath{Decision: DecisionOf(t.Verdict), Budget: r.Model.P0, Packets: t.Packets, Marks: t.Marks})
			budgets = append(budgets, r.Model.P0)
		}
		if missing != "" {
			c.Tests = append(c.Tests, model.MBMComposedTest{ID: t0.ID, Verdict: model.MBMInconclusive, Reason: "no result for this test in " + missing})
			continue
		}
		comp, err := Compose(c.PathP0, subs)
		if err != nil {
			return c, fmt.Errorf("test %s: %w", clip(t0.ID), err)
		}
		c.Tests = append(c.Tests, model.MBMComposedTest{ID: t0.ID, Verdict: comp.Decision.Verdict(), Reason: comp.Reason,
			Loss: comp.Loss, LossLow: comp.LossLow, LossHigh: comp.LossHigh, Budgets: budgets, BudgetsFit: BudgetsFit(c.PathP0, budgets),
			SubpathPackets: subpathPackets(subs)})
	}
	return c, nil
}

func subpathPackets(subs []Subpath) []int64 {
	n := make([]int64, len(subs))
	for i, s := range subs {
		n[i] = s.Packets
	}
	return n
}

// AddMeasured records, beside each composed test, the same test measured
// end to end (e2e, read from path).
func AddMeasured(c *model.MBMComposition, path string, e2e model.MBMResult) {
	c.Path = path
	for i := range c.Tests {
		ct := &c.Tests[i]
		if t, ok := findTest(e2e, ct.ID); ok {
			ct.Measured = &model.MBMMeasured{Verdict: t.Verdict, Packets: t.Packets, Marks: t.Marks, Loss: t.Loss, LossLow: t.LossLow, LossHigh: t.LossHigh}
		}
	}
}

func findTest(r model.MBMResult, id string) (model.MBMTest, bool) {
	for _, t := range r.Tests {
		if t.ID == id {
			return t, true
		}
	}
	return model.MBMTest{}, false
}

// Result is the saved record of a plan: every parameter of the model and
// the SPRT (schema sonde.mbm/v1), with no tests yet.
func Result(p Plan) model.MBMResult {
	r := model.MBMResult{
		Schema: model.MBMSchemaVersion,
		Target: model.MBMTarget{RateBps: p.RateBps, RTTMs: float64(p.RTT) / 1e6, MTUBytes: p.MTU, HeaderOverheadBytes: p.HeaderOverhead},
		Model: model.MBMModel{WindowPackets: p.W, RunLengthModel: p.Model, RunLengthPackets: p.R,
			P0: p.P0, P1: p.P1, LossBudget: p.Budget, PathP0: 1 / p.R},
		SPRT: model.MBMSPRT{Alpha: p.Alpha, Beta: p.Beta, K: p.Lines.K, S: p.Lines.S, H1: p.Lines.H1, H2: p.Lines.H2,
			FloorPackets: p.FloorPackets, TruncFactor: p.TruncFactor, MaxPackets: p.MaxPackets,
			ASNAtP0: p.ASNAtP0, ASNAtP1: p.ASNAtP1, MaxASN: p.MaxASN, CheapestPass: p.CheapestPass, CheapestFail: p.CheapestFail},
	}
	for _, m := range p.Models {
		r.Model.Models = append(r.Model.Models, model.MBMRunLength{Model: m.Model, Packets: m.Packets, RatioTo3W2: m.Ratio, About: m.About})
	}
	return r
}
