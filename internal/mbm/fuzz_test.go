package mbm

import (
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzPlan: any inputs either give a plan whose figures are finite and
// bounded (R > 4, 0 < p0 < p1 < 1, a truncation point that fits) or one
// error; R ≤ 4 is always refused; never a panic.
func FuzzPlan(f *testing.F) {
	f.Add(10e6, int64(50*time.Millisecond), 1500, 52, "reference", 0.05, 0.05, int64(0), 0.0, 0.0)
	f.Add(10e6, int64(time.Millisecond), 1500, 52, "reference", 0.05, 0.05, int64(0), 0.0, 0.0)
	f.Add(1e15, int64(time.Minute), 68, 0, "cubic", 1e-6, 0.5, int64(1e9), 100.0, 0.0)
	f.Add(1.0, int64(time.Microsecond), 65535, 65534, "mathis", 0.25, 1e-6, int64(-1), 1.0, 1e-5)
	f.Add(math.NaN(), int64(-1), -1, -1, "x", math.Inf(1), math.NaN(), int64(math.MaxInt64), math.NaN(), -1.0)
	f.Fuzz(func(t *testing.T, rate float64, rtt int64, mtu, hdr int, model string, alpha, beta float64, floor int64, trunc, budget float64) {
		in := Inputs{Target: Target{RateBps: rate, RTT: time.Duration(rtt), MTU: mtu, HeaderOverhead: hdr}, Model: model, Alpha: alpha, Beta: beta, FloorPackets: floor, TruncFactor: trunc, Budget: budget}
		p, err := NewPlan(in)
		if err != nil {
			if len(err.Error()) > 300 {
				t.Fatalf("error longer than a line: %q", err)
			}
			return
		}
		if !(p.R > 4) {
			t.Fatalf("R = %g accepted", p.R)
		}
		if !(p.P0 > 0 && p.P0 < p.P1 && p.P1 < 1) {
			t.Fatalf("p0 %g, p1 %g", p.P0, p.P1)
		}
		for _, v := range []float64{p.Lines.K, p.Lines.S, p.Lines.H1, p.Lines.H2, p.MaxASN, p.ASNAtP0, p.ASNAtP1} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Fatalf("figure %g in %+v", v, p)
			}
		}
		if p.MaxPackets <= 0 || p.CheapestPass <= 0 || p.CheapestPass > p.MaxPackets {
			t.Fatalf("max %d, cheapest pass %d", p.MaxPackets, p.CheapestPass)
		}
		// A short walk: the SPRT holds its invariants.
		s := p.NewSPRT()
		for i := 0; i < 64 && s.Decision() == Continue; i++ {
			s.Observe(i%3 == 0)
		}
		if s.Marks() > s.Packets() {
			t.Fatalf("m %d > n %d", s.Marks(), s.Packets())
		}
	})
}

// FuzzCompose: any subpath figures compose or give one error, never a
// panic, and the composed loss is within [0, 1].
func FuzzCompose(f *testing.F) {
	f.Add(1e-4, 1, 5e-5, int64(100), int64(0), 2, 5e-5, int64(10), int64(10))
	f.Add(-1.0, 9, math.NaN(), int64(-1), int64(5), 0, 2.0, int64(0), int64(1))
	f.Fuzz(func(t *testing.T, p0 float64, d1 int, b1 float64, n1, m1 int64, d2 int, b2 float64, n2, m2 int64) {
		c, err := Compose(p0, []Subpath{{Decision(d1), b1, n1, m1}, {Decision(d2), b2, n2, m2}})
		if err != nil {
			if errors.Is(err, ErrRunLength) {
				t.Fatal("unexpected error kind")
			}
			return
		}
		if !(c.Loss >= 0 && c.Loss <= 1 && c.LossLow <= c.LossHigh) {
			t.Fatalf("%+v", c)
		}
	})
}
