package mbm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// lossProcess says whether the next packet is marked.
type lossProcess interface{ next() bool }

// iid marks each packet with probability p.
type iid struct {
	r *rand.Rand
	p float64
}

func (l *iid) next() bool { return l.r.Float64() < l.p }

// gilbertElliott is a two-state Markov loss: every packet in the bad
// state is lost, none in the good one; a bad state lasts burst packets on
// average and the mean loss is p.
type gilbertElliott struct {
	r         *rand.Rand
	bad       bool
	toBad     float64 // P(good → bad)
	toGood    float64 // P(bad → good)
	burstMean float64
}

func newGE(r *rand.Rand, p, burst float64) *gilbertElliott {
	// Stationary P(bad) = toBad/(toBad+toGood) = p, toGood = 1/burst.
	toGood := 1 / burst
	return &gilbertElliott{r: r, toBad: p * toGood / (1 - p), toGood: toGood, burstMean: burst}
}

func (g *gilbertElliott) next() bool {
	if g.bad {
		g.bad = g.r.Float64() >= g.toGood
	} else {
		g.bad = g.r.Float64() < g.toBad
	}
	return g.bad
}

// simResult is what runs of an SPRT gave on one loss process.
type simResult struct {
	runs, pass, fail, inconclusive int
	meanN                          float64
}

// simulate runs the SPRT (the production type, packet by packet) runs
// times; newLoss makes each run's loss process.
func simulate(t *testing.T, l Lines, floor, max int64, runs int, newLoss func() lossProcess) simResult {
	t.Helper()
	res := simResult{runs: runs}
	var sumN float64
	for range runs {
		s, err := NewSPRT(l, floor, max)
		if err != nil {
			t.Fatal(err)
		}
		loss := newLoss()
		d := Continue
		for d == Continue {
			d = s.Observe(loss.next())
		}
		switch d {
		case Pass:
			res.pass++
		case Fail:
			res.fail++
		case Inconclusive:
			res.inconclusive++
		}
		sumN += float64(s.Packets())
	}
	res.meanN = sumN / float64(runs)
	return res
}

// ocPoints are the reference operating characteristic
// (reference-values.md: α = β = 0.05, per-packet checks, i.i.d. loss) as
// multiples of p0, with the digits given.
var ocPoints = []struct {
	mult, pass float64
	digits     int
}{
	{0.25, 1.000, 3}, {1, 0.967, 3}, {2, 0.63, 2}, {4, 0.053, 3}, {8, 0.001, 3},
}

// ocMismatch compares simulated P(PASS) with the reference values within
// their sampling error (4 standard errors, at least one run in the
// simulation's resolution) plus the rounding of the reference; it returns
// what disagrees.
func ocMismatch(t *testing.T, l Lines, p0 float64, max int64, runs int, seed uint64) []string {
	t.Helper()
	var bad []string
	for i, pt := range ocPoints {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		res := simulate(t, l, 0, max, runs, func() lossProcess { return &iid{r, pt.mult * p0} })
		got := float64(res.pass) / float64(runs)
		sigma := math.Sqrt(math.Max(pt.pass*(1-pt.pass), 1/float64(runs)) / float64(runs))
		tol := 4*sigma + 0.5*math.Pow(10, -float64(pt.digits))
		t.Logf("p = %.2f·p0: P(PASS) = %.4f (reference %.3f ± %.4f), inconclusive %d, mean n %.0f", pt.mult, got, pt.pass, tol, res.inconclusive, res.meanN)
		if math.Abs(got-pt.pass) > tol {
			bad = append(bad, "P(PASS) at "+fmtF(pt.mult)+"·p0 = "+fmtF(got)+", reference "+fmtF(pt.pass))
		}
	}
	return bad
}

func fmtF(v float64) string { return formatG(v) }

// simPlan is a target small enough to simulate 20k runs a point quickly:
// 11.584 Mbit/s, 10 ms, MTU 1500 → W = 10, R = 300.
func simPlan(t *testing.T) Plan {
	t.Helper()
	p, err := NewPlan(Inputs{Target: Target{RateBps: 11.584e6, RTT: 10e6, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: 0.05, Beta: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if p.W != 10 || p.R != 300 {
		t.Fatalf("W = %d, R = %g: want 10, 300", p.W, p.R)
	}
	return p
}

// TestOperatingCharacteristic: the SPRT's P(PASS) on i.i.d. loss matches
// the reference operating characteristic; and the same comparison
// rejects an SPRT with a wrong slope s or a wrong k, so that it can fail.
func TestOperatingCharacteristic(t *testing.T) {
	p := simPlan(t)
	const runs = 40000
	if bad := ocMismatch(t, p.Lines, p.P0, p.MaxPackets, runs, 1); len(bad) > 0 {
		t.Errorf("operating characteristic: %v", bad)
	}
	if testing.Short() {
		return
	}
	wrongS := p.Lines
	wrongS.S *= 1.15
	if bad := ocMismatch(t, wrongS, p.P0, p.MaxPackets, runs, 2); len(bad) == 0 {
		t.Errorf("a slope s 15 %% too large passed the comparison: it cannot fail")
	}
	// k 20 % too small: s = ln((1−p0)/(1−p1))/k and h = ln(…)/k all
	// grow by 1/0.8.
	wrongK := p.Lines
	wrongK.K *= 0.8
	wrongK.S, wrongK.H1, wrongK.H2 = wrongK.S/0.8, wrongK.H1/0.8, wrongK.H2/0.8
	if bad := ocMismatch(t, wrongK, p.P0, p.MaxPackets, runs, 3); len(bad) == 0 {
		t.Errorf("a k 20 %% too small passed the comparison: it cannot fail")
	}
}

// TestASNAtQuarterP0: the packets to decide at p = 0.25·p0 are within
// 1.1× Wald's approximation (the decision-cost bar).
func TestASNAtQuarterP0(t *testing.T) {
	p := simPlan(t)
	r := rand.New(rand.NewPCG(7, 7))
	res := simulate(t, p.Lines, 0, p.MaxPackets, 20000, func() lossProcess { return &iid{r, 0.25 * p.P0} })
	wald := p.Lines.ASN(0.25 * p.P0)
	ratio := res.meanN / wald
	t.Logf("p = 0.25·p0: mean packets %.1f, Wald %.1f, ratio %.3f", res.meanN, wald, ratio)
	if ratio > 1.1 || ratio < 1/1.1 {
		t.Errorf("mean packets to decide %.1f against Wald's %.1f: ratio %.3f outside 1/1.1…1.1", res.meanN, wald, ratio)
	}
}

// TestFloorAgainstBurstyFalseFails: on Gilbert–Elliott loss at p0/2
// (bursts of 4 packets), H0 holds, so every FAIL is false; a floor of R
// packets makes fewer of them, and a floor of 4·R fewer still, each step
// by more than 4 standard errors of the difference.
func TestFloorAgainstBurstyFalseFails(t *testing.T) {
	p := simPlan(t)
	const runs = 40000
	rate := func(floor int64, seed uint64) float64 {
		r := rand.New(rand.NewPCG(seed, 11))
		res := simulate(t, p.Lines, floor, p.MaxPackets, runs, func() lossProcess { return newGE(r, p.P0/2, 4) })
		return float64(res.fail) / runs
	}
	rates := []float64{rate(0, 5), rate(int64(p.R), 6), rate(int64(4*p.R), 7)}
	t.Logf("Gilbert–Elliott at p0/2, bursts of 4: false FAIL %.4f without a floor, %.4f with a floor of R = %g packets, %.4f with 4·R", rates[0], rates[1], p.R, rates[2])
	for i := 1; i < len(rates); i++ {
		a, b := rates[i-1], rates[i]
		se := math.Sqrt(a*(1-a)/runs + b*(1-b)/runs)
		if !(a-b > 4*se) {
			t.Errorf("false FAILs %.4f then %.4f with a larger floor: want a drop of more than 4·%.4f", a, b, se)
		}
	}
}
