package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// rfc3357 is the example stream of RFC 3357 §4: r r r x r r x x x r x r r x x x.
func rfc3357() []bool {
	const s = "rrrxrrxxxrxrrxxx"
	lost := make([]bool, len(s))
	for i, c := range s {
		lost[i] = c == 'x'
	}
	return lost
}

func TestLossDistancesRFC3357(t *testing.T) {
	got := LossDistances(rfc3357())
	want := []int{0, 0, 0, 0, 0, 0, 3, 1, 1, 0, 2, 0, 0, 3, 1, 1}
	if !slices.Equal(got, want) {
		t.Fatalf("loss distances = %v, want %v", got, want)
	}
}

func TestLossPeriodsRFC3357(t *testing.T) {
	got := LossPeriods(rfc3357())
	// RFC 3357 §4: four loss periods starting at packets 3, 6, 10 and 13.
	want := []int{0, 0, 0, 1, 0, 0, 2, 2, 2, 0, 3, 0, 0, 4, 4, 4}
	if !slices.Equal(got, want) {
		t.Fatalf("loss periods = %v, want %v", got, want)
	}
}

func TestLossPatternRFC3357(t *testing.T) {
	p := LossPatternOf(rfc3357(), 2)
	if p.Packets != 16 || p.Lost != 8 || p.Periods != 4 {
		t.Fatalf("packets/lost/periods = %d/%d/%d, want 16/8/4", p.Packets, p.Lost, p.Periods)
	}
	// Lengths 1, 3, 1, 3.
	if p.PeriodLength.N != 4 || p.PeriodLength.Min != 1 || p.PeriodLength.Max != 3 || p.PeriodLength.Mean != 2 {
		t.Errorf("period lengths = %+v, want n 4, min 1, max 3, mean 2", p.PeriodLength)
	}
	if len(p.PeriodLengthCounts) != 2 || p.PeriodLengthCounts[0].Value != 1 || p.PeriodLengthCounts[0].Count != 2 ||
		p.PeriodLengthCounts[1].Value != 3 || p.PeriodLengthCounts[1].Count != 2 {
		t.Errorf("period length counts = %+v, want 1:2 3:2", p.PeriodLengthCounts)
	}
	// Inter-loss-period lengths: 6−3, 10−8, 13−10.
	if p.InterPeriodLength.N != 3 || p.InterPeriodLength.Min != 2 || p.InterPeriodLength.Max != 3 {
		t.Errorf("inter-period lengths = %+v, want 3, 2, 3", p.InterPeriodLength)
	}
	// Distances of the 7 losses after the first: 3 1 1 2 3 1 1; ≤ 2: five.
	if p.LossDistance.N != 7 || p.LossDistance.Max != 3 {
		t.Errorf("loss distance = %+v", p.LossDistance)
	}
	if want := 5.0 / 16; p.NoticeableLossRate != want {
		t.Errorf("noticeable loss rate(δ=2) = %v, want %v", p.NoticeableLossRate, want)
	}
	if q := LossPatternOf(rfc3357(), 1); q.NoticeableLossRate != 4.0/16 {
		t.Errorf("noticeable loss rate(δ=1) = %v, want 4/16", q.NoticeableLossRate)
	}
}

func TestLossPatternEdges(t *testing.T) {
	if p := LossPatternOf(nil, 1); p.Packets != 0 || p.Periods != 0 || p.NoticeableLossRate != 0 {
		t.Errorf("empty = %+v", p)
	}
	p := LossPatternOf([]bool{true, true, false, true}, 1)
	if p.Periods != 2 || p.PeriodLength.Max != 2 || p.InterPeriodLength.Min != 2 {
		t.Errorf("x x r x = %+v", p)
	}
}

func TestJitter3550KnownSeries(t *testing.T) {
	send := []float64{0, 20, 40, 60, 80}
	recv := []float64{100, 121, 139, 165, 180}
	// Transit 100 101 99 105 100: |D| = 1 2 6 5, J = 0.8254241943359375
	// (computed by hand with J += (|D| − J)/16).
	if got := Jitter3550(send, recv); math.Abs(got-0.8254241943359375) > 1e-12 {
		t.Fatalf("jitter = %v, want 0.8254241943359375", got)
	}
	// A constant clock offset cancels.
	shifted := slices.Clone(recv)
	for i := range shifted {
		shifted[i] += 12345.678
	}
	if got := Jitter3550(send, shifted); math.Abs(got-0.8254241943359375) > 1e-9 {
		t.Fatalf("jitter with offset = %v", got)
	}
	if Jitter3550(send[:1], recv[:1]) != 0 {
		t.Fatal("one packet must give 0")
	}
}

func TestJitter3550ConstantDelayIsZero(t *testing.T) {
	var s, r []float64
	for i := range 100 {
		s = append(s, float64(i)*20)
		r = append(r, float64(i)*20+37)
	}
	if j := Jitter3550(s, r); j != 0 {
		t.Fatalf("jitter of constant delay = %v", j)
	}
}

func TestIPDVAndPDV(t *testing.T) {
	nan := math.NaN()
	owd := []float64{10, 12, nan, 11, 15, 10}
	if got, want := IPDV(owd), []float64{2, 4, -5}; !slices.Equal(got, want) {
		t.Errorf("IPDV = %v, want %v", got, want)
	}
	if got, want := PDV(owd), []float64{0, 2, 1, 5, 0}; !slices.Equal(got, want) {
		t.Errorf("PDV = %v, want %v", got, want)
	}
}

func TestReorderingRFC4737(t *testing.T) {
	// Arrival order 1 2 4 5 3 6 8 7, with a duplicate 5.
	r, dups := ReorderingOf([]uint64{1, 2, 4, 5, 5, 3, 6, 8, 7})
	if dups != 1 {
		t.Errorf("duplicates = %d, want 1", dups)
	}
	if r.Received != 8 || r.Reordered != 2 {
		t.Fatalf("received/reordered = %d/%d, want 8/2", r.Received, r.Reordered)
	}
	// 3 arrived at index 4; the first arrival above 3 was 4 at index 2:
	// extent 2. 7 at index 7, first above it 8 at index 6: extent 1.
	if r.MaxExtent != 2 || r.ExtentPackets.Min != 1 || r.ExtentPackets.N != 2 {
		t.Errorf("extent = %+v max %d", r.ExtentPackets, r.MaxExtent)
	}
	if r.RatioPct != 25 {
		t.Errorf("ratio = %v, want 25", r.RatioPct)
	}
	if r, _ := ReorderingOf([]uint64{0, 1, 2, 3}); r.Reordered != 0 {
		t.Errorf("in-order stream reordered %d", r.Reordered)
	}
	// A gap (loss) alone is no reordering.
	if r, _ := ReorderingOf([]uint64{0, 1, 5, 6}); r.Reordered != 0 {
		t.Errorf("loss counted as reordering: %d", r.Reordered)
	}
}

// synth builds probes between a client clock and a reflector clock that
// runs fast by driftPPM and is ahead by offset, with base delays fwd and
// back plus exponential queueing noise.
func synth(n int, interval, offset, driftPPM, fwd, back, noise float64, seed uint64) []Probe {
	rng := rand.New(rand.NewPCG(seed, 1))
	refl := func(t float64) float64 { return offset + t*(1+driftPPM*1e-6) }
	var ps []Probe
	for i := range n {
		t1 := float64(i) * interval
		arrive := t1 + fwd + rng.ExpFloat64()*noise
		leave := arrive + 20e-6
		t4 := leave + back + rng.ExpFloat64()*noise
		ps = append(ps, Probe{T1: t1, T2: refl(arrive), T3: refl(leave), T4: t4})
	}
	return ps
}

func TestEstimateOffsetSkewedClocks(t *testing.T) {
	const offset, drift = 3.2, 50.0 // 3.2 s ahead, 50 ppm fast
	ps := synth(6000, 0.01, offset, drift, 0.010, 0.010, 0.002, 1)
	o, ok := EstimateOffset(ps, 5)
	if !ok {
		t.Fatal("no estimate")
	}
	if math.Abs(o.At-offset) > 100e-6 {
		t.Errorf("offset = %.6f s, want %.6f ± 100 µs", o.At, offset)
	}
	if math.Abs(o.Drift*1e6-drift) > 2 {
		t.Errorf("drift = %.2f ppm, want %.0f ± 2", o.Drift*1e6, drift)
	}
	// Symmetric path: one-way delays recovered to within 0.2 ms at the
	// low end (the base delay 10 ms).
	var minF, minB = math.Inf(1), math.Inf(1)
	for _, p := range ps {
		minF = math.Min(minF, o.Forward(p))
		minB = math.Min(minB, o.Backward(p))
	}
	if math.Abs(minF-0.010) > 0.2e-3 || math.Abs(minB-0.010) > 0.2e-3 {
		t.Errorf("min forward/backward = %.4f/%.4f ms, want 10/10 ± 0.2", minF*1e3, minB*1e3)
	}
	if o.Uncertainty < 0.010 {
		t.Errorf("uncertainty %.4f ms below half the minimum RTT", o.Uncertainty*1e3)
	}
}

func TestEstimateOffsetAsymmetryWithinUncertainty(t *testing.T) {
	// 10 ms forward, 30 ms back: two-way probes cannot see the asymmetry, so
	// θ is off by (10 − 30)/2 = −10 ms, which the uncertainty must cover.
	ps := synth(3000, 0.01, -1.5, -20, 0.010, 0.030, 0.001, 2)
	o, _ := EstimateOffset(ps, 5)
	err := math.Abs(o.At - (-1.5))
	if math.Abs(err-0.010) > 0.3e-3 {
		t.Errorf("offset error = %.3f ms, want about 10 ms (half the asymmetry)", err*1e3)
	}
	if err > o.Uncertainty {
		t.Errorf("offset error %.3f ms exceeds reported uncertainty %.3f ms", err*1e3, o.Uncertainty*1e3)
	}
}

func TestEstimateOffsetBadInput(t *testing.T) {
	if _, ok := EstimateOffset(nil, 1); ok {
		t.Error("empty input gave an estimate")
	}
	bad := []Probe{{T1: math.NaN()}, {T1: 0, T2: 1, T3: 5, T4: 2}} // second has RTT < 0
	if _, ok := EstimateOffset(bad, 1); ok {
		t.Error("only invalid probes gave an estimate")
	}
	o, ok := EstimateOffset([]Probe{{T1: 1, T2: 1.5, T3: 1.5, T4: 1.02}}, 0)
	if !ok || math.Abs(o.At-0.49) > 1e-12 || o.Drift != 0 {
		t.Errorf("single probe = %+v", o)
	}
}

func TestEModel(t *testing.T) {
	if got := MOSFromR(ERating(0, 0, G711Ie, G711Bpl)); math.Abs(got-4.409285824) > 1e-9 {
		t.Errorf("MOS(0 ms, 0%%) = %v, want 4.409285824", got)
	}
	// 200 ms, 1%: R = 93.2 − (4.8 + 0.11·22.7) − 95·1/5.3 = 67.978.
	r := ERating(200, 1, G711Ie, G711Bpl)
	if math.Abs(r-67.97847169811321) > 1e-9 {
		t.Errorf("R(200 ms, 1%%) = %v", r)
	}
	if got := MOSFromR(r); math.Abs(got-3.5008178487179937) > 1e-9 {
		t.Errorf("MOS = %v", got)
	}
	if MOSFromR(-5) != 1 || MOSFromR(120) != 4.5 || MOSFromR(math.NaN()) != 1 {
		t.Error("MOS clamps wrong")
	}
	v := VoiceG711(150, 0, "x")
	if v.MOS <= 4 || v.MOS > 4.41 {
		t.Errorf("MOS at 150 ms = %v", v.MOS)
	}
}

func TestHistogram(t *testing.T) {
	h := Histogram([]float64{0.1, 0.2, 0.25, 0.9, math.NaN()}, 10)
	total := 0
	for _, b := range h {
		total += b.Count
		if b.Hi <= b.Lo {
			t.Fatalf("bad bin %+v", b)
		}
	}
	if total != 4 || len(h) > 10 {
		t.Fatalf("histogram %+v: total %d", h, total)
	}
	if h[0].Lo > 0.1 || h[len(h)-1].Hi < 0.9 {
		t.Errorf("bins do not cover the sample: %+v", h)
	}
	if c := Histogram([]float64{5, 5, 5}, 4); len(c) != 1 || c[0].Count != 3 {
		t.Errorf("constant sample = %+v", c)
	}
	if Histogram(nil, 3) != nil {
		t.Error("empty sample gave bins")
	}
}
