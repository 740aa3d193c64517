package mbm

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

func formatG(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.10g, want %.10g", what, got, want)
	}
}

// TestPlanByHand: --rate 10M --rtt 50ms --mtu 1500, worked by hand:
// W = ceil(10^7 × 0.05 / (8 × 1448)) = ceil(43.16) = 44; R = 3 × 44² =
// 5808; p0 = 1/5808 = 1.72176e-4; p1 = 4/5808 = 6.88705e-4;
// k = ln(4 × (1 − p0)/(1 − p1)) = ln 4 + ln(1.000517…) = 1.386811;
// s = ln((1 − p0)/(1 − p1))/k = 5.16753e-4/1.386811 = 3.72618e-4;
// h1 = h2 = ln 19 / k = 2.944439/1.386811 = 2.123172;
// cheapest PASS = ceil(h1/s) = ceil(5697.98) = 5698 (0.981·R);
// cheapest FAIL = ceil(h2/(1 − s)) = 3 marks.
func TestPlanByHand(t *testing.T) {
	p, err := NewPlan(Inputs{Target: Target{RateBps: 10e6, RTT: 50 * time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: 0.05, Beta: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if p.W != 44 || p.R != 5808 {
		t.Fatalf("W = %d, R = %g: want 44, 5808", p.W, p.R)
	}
	near(t, "p0", p.P0, 1.0/5808, 1e-12)
	near(t, "p1", p.P1, 4.0/5808, 1e-12)
	near(t, "k", p.Lines.K, 1.386811, 1e-6)
	near(t, "s", p.Lines.S, 3.72618e-4, 1e-5)
	near(t, "h1", p.Lines.H1, 2.123172, 1e-6)
	near(t, "h2", p.Lines.H2, 2.123172, 1e-6)
	if p.CheapestPass != 5698 || p.CheapestFail != 3 {
		t.Errorf("cheapest PASS %d, FAIL %d: want 5698, 3", p.CheapestPass, p.CheapestFail)
	}
	// Max ASN = h1·h2/(s(1 − s)) = 4.507859/3.72479e-4 = 12102.3.
	near(t, "max ASN", p.MaxASN, 12102.3, 1e-5)
	if p.MaxPackets != int64(math.Ceil(5*p.MaxASN)) {
		t.Errorf("truncation %d, want ceil(5 × %g)", p.MaxPackets, p.MaxASN)
	}
	// Ratios: mathis (2/3)W²/3W² = 2/9; mathis-delack 4/9; cubic here
	// is in its Reno-friendly region, 2/9 too.
	want := map[string]float64{"reference": 1, "mathis": 2.0 / 9, "mathis-delack": 4.0 / 9, "cubic": 2.0 / 9}
	for _, m := range p.Models {
		near(t, m.Model+" ratio", m.Ratio, want[m.Model], 1e-12)
	}
	// The lines at n = 5808: PASS if m ≤ −2.1232 + 0.37262·5.808 =
	// −0.0590 (no mark yet at R: not PASS... ) and FAIL at ≥ 4.2874.
	near(t, "pass limit at R", p.Lines.PassLimit(5808), -2.123172+3.72618e-4*5808, 1e-4)
	near(t, "fail limit at R", p.Lines.FailLimit(5808), 2.123172+3.72618e-4*5808, 1e-5)
}

// TestSPRTPerPacket walks the lines of the hand-computed plan.
func TestSPRTPerPacket(t *testing.T) {
	p, err := NewPlan(Inputs{Target: Target{RateBps: 10e6, RTT: 50 * time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: 0.05, Beta: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSPRT()
	for i := int64(1); i < 5698; i++ {
		if d := s.Observe(false); d != Continue {
			t.Fatalf("decided %s after %d clean packets, want PASS at 5698", d, i)
		}
	}
	if d := s.Observe(false); d != Pass || s.Packets() != 5698 {
		t.Fatalf("%s after %d packets, want PASS at 5698", d, s.Packets())
	}
	if d := s.Observe(true); d != Pass || s.Marks() != 0 {
		t.Errorf("a decided test moved: %s, %d marks", d, s.Marks())
	}
	// Three marks in a row FAIL at once (3 ≥ 2.1232 + 3·0.00037).
	f := p.NewSPRT()
	f.Observe(true)
	f.Observe(true)
	if d := f.Observe(true); d != Fail {
		t.Errorf("three marks: %s, want FAIL", d)
	}
	// With a floor of 100 packets, the same marks wait for packet 100.
	p.FloorPackets = 100
	g := p.NewSPRT()
	for range 3 {
		g.Observe(true)
	}
	for g.Decision() == Continue {
		g.Observe(false)
	}
	if g.Decision() != Fail || g.Packets() != 100 {
		t.Errorf("with a floor of 100: %s at %d, want FAIL at 100", g.Decision(), g.Packets())
	}
	// Truncation: alternating near p = s never decides before the max.
	short, _ := NewSPRT(p.Lines, 0, 50)
	for short.Decision() == Continue {
		short.Observe(false)
	}
	if short.Decision() != Inconclusive || short.Packets() != 50 {
		t.Errorf("truncated at 50: %s at %d", short.Decision(), short.Packets())
	}
}

func TestRejectShortRunLength(t *testing.T) {
	// 10 Mbit/s at 1 ms: W = ceil(0.863) = 1, R = 3.
	_, err := NewPlan(Inputs{Target: Target{RateBps: 10e6, RTT: time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: 0.05, Beta: 0.05})
	if !errors.Is(err, ErrRunLength) {
		t.Fatalf("R = 3: %v, want ErrRunLength", err)
	}
	t.Log(err)
	// W = 2 passes the reference (R = 12) but not mathis ((2/3)·4 = 2.67).
	in := Inputs{Target: Target{RateBps: 20e6, RTT: time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: 0.05, Beta: 0.05}
	if _, err := NewPlan(in); err != nil {
		t.Errorf("W = 2, reference: %v", err)
	}
	in.Model = "mathis"
	if _, err := NewPlan(in); !errors.Is(err, ErrRunLength) {
		t.Errorf("W = 2, mathis: %v, want ErrRunLength", err)
	}
}

func TestWilson(t *testing.T) {
	// m = 0, n = 100: hi = z²/n/(1 + z²/n) = 3.8415/103.8415 = 0.036994.
	lo, hi := Wilson(0, 100)
	near(t, "Wilson(0,100) hi", hi, 0.036994, 1e-4)
	if lo != 0 {
		t.Errorf("lo = %g", lo)
	}
	// m = 5, n = 100 (Newcombe 1998's table: 0.0215, 0.1118).
	lo, hi = Wilson(5, 100)
	near(t, "Wilson(5,100) lo", lo, 0.0215, 5e-3)
	near(t, "Wilson(5,100) hi", hi, 0.1118, 5e-3)
}

func TestComposition(t *testing.T) {
	near(t, "1−(0.99)(0.98)", ComposeLoss([]float64{0.01, 0.02}), 0.0298, 1e-12)
	p0 := 1.0 / 5808
	b, err := EqualBudgets(p0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !BudgetsFit(p0, b) {
		t.Errorf("equal budgets %v do not fit p0 %g", b, p0)
	}
	if BudgetsFit(p0, []float64{p0 / 2, p0 / 2, p0 / 2}) {
		t.Errorf("three halves of p0 fit p0")
	}
	pass := Subpath{Pass, b[0], 6000, 0}
	c, err := Compose(p0, []Subpath{pass, pass, pass})
	if err != nil || c.Decision != Pass {
		t.Errorf("three PASSes: %+v %v", c, err)
	}
	c, _ = Compose(p0, []Subpath{pass, {Fail, b[0], 200, 5}, pass})
	if c.Decision != Fail {
		t.Errorf("a FAIL: %+v", c)
	}
	c, _ = Compose(p0, []Subpath{pass, {Inconclusive, b[0], 9000, 3}})
	if c.Decision != Inconclusive {
		t.Errorf("an INCONCLUSIVE: %+v", c)
	}
	c, _ = Compose(p0, []Subpath{{Pass, p0, 10, 0}, {Pass, p0, 10, 0}})
	if c.Decision != Inconclusive {
		t.Errorf("budgets p0 + p0 for a path of p0: %+v", c)
	}
}

func TestMathisRate(t *testing.T) {
	// MSS 1448, RTT 50 ms, p = 1/5808, C = √(3/2): 1448·8/0.05 ×
	// 1.224745 × 76.2102 = 231680 × 93.337 = 21.624 Mbit/s, and the
	// model inverts: the window at that rate is W/C … (2/3)W² = 1/p.
	got := MathisRate(1448, 50*time.Millisecond, 1.0/5808, MathisC)
	near(t, "Mathis rate", got, 231680*math.Sqrt(1.5)*math.Sqrt(5808), 1e-12)
	near(t, "Mathis rate (digits)", got, 21.6245e6, 1e-4)
}

func TestWaldApproximations(t *testing.T) {
	p, err := NewPlan(Inputs{Target: Target{RateBps: 10e6, RTT: 50 * time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: 0.05, Beta: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Lines
	// Wald: L(p0) = 1 − α, L(p1) = β, L(0) = 1, ASN(0) = h1/s.
	near(t, "OC(p0)", l.OC(p.P0), 0.95, 1e-6)
	near(t, "OC(p1)", l.OC(p.P1), 0.05, 1e-6)
	near(t, "OC(0)", l.OC(0), 1, 1e-12)
	near(t, "ASN(0)", l.ASN(0), l.H1/l.S, 1e-9)
	near(t, "ASN(s)", l.ASN(l.S), l.MaxASN(), 1e-9)
	near(t, "ASN near s", l.ASN(l.S*1.0001), l.MaxASN(), 1e-3)
}
