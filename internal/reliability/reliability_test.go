package reliability

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

const t0 = int64(1_700_000_040) * sec // a minute boundary

func streams(names ...string) []model.MonitorStream {
	var out []model.MonitorStream
	for _, n := range names {
		t, k, _ := strings.Cut(n, "/")
		out = append(out, model.MonitorStream{Target: t, Kind: model.ProbeKind(k), Name: n})
	}
	return out
}

func sample(stream int32, seq int, rttMs float64, load model.LoadState) model.ProbeSample {
	s := model.ProbeSample{Stream: stream, Seq: uint32(seq), SentNs: t0 + int64(seq)*100*ms, RTTNs: int64(rttMs * 1e6), Load: load}
	if rttMs < 0 {
		s.RTTNs, s.Lost = -1, true
	}
	return s
}

func analyse(t testing.TB, cfg Config, ss []model.MonitorStream, samples []model.ProbeSample) *model.MonitorReport {
	t.Helper()
	a, err := New(cfg, ss)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if err := a.AddSample(s); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := a.Report(t0, t0+int64(len(samples))*100*ms)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// analyseRollups rolls samples up into minutes and reports from the
// rollups alone; it returns the report and the number of rollups.
func analyseRollups(t testing.TB, cfg Config, ss []model.MonitorStream, samples []model.ProbeSample) (*model.MonitorReport, int) {
	t.Helper()
	a, err := New(cfg, ss)
	if err != nil {
		t.Fatal(err)
	}
	var rolls []model.MonitorRollup
	r := NewRoller(a.ThresholdsNs(), func(m model.MonitorRollup) { rolls = append(rolls, m) })
	for _, s := range samples {
		if err := r.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	r.Flush()
	for _, ro := range rolls {
		if err := a.AddRollup(ro); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := a.Report(t0, t0)
	if err != nil {
		t.Fatal(err)
	}
	return rep, len(rolls)
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestBounds(t *testing.T) {
	// Reference values computed by hand from the Wilson formula, z = 1.959964:
	// 98/100: centre 0.98 + 3.8415/200 = 0.999207, half 1.96·√(0.000196 +
	// 0.0000960) = 0.033494, ÷ 1.038415 → [0.929988, 0.994498].
	for _, c := range []struct {
		ok, n        uint64
		lower, upper float64
	}{
		{98, 100, 0.929988, 0.994498},
		{950, 1000, 0.934686, 0.961870},
		{1, 10, 0.017876, 0.404150},
		{0, 5, 0, 0.434482},
		{300, 300, 0.99, 1}, // rule of three: 1 − 3/300
		{600, 600, 0.995, 1},
		{0, 0, 0, 1},
	} {
		lo, up := Bounds(c.ok, c.n)
		if !near(lo, c.lower, 1e-6) || !near(up, c.upper, 1e-6) {
			t.Errorf("Bounds(%d, %d) = [%.6f, %.6f], want [%.6f, %.6f]", c.ok, c.n, lo, up, c.lower, c.upper)
		}
	}
}

func TestHistogramAccuracy(t *testing.T) {
	for _, ns := range []int64{1000, 1500, 19 * ms, 430 * ms, 2 * sec, 900 * sec} {
		b := BinOf(ns)
		mid := float64(binMidNs(b))
		if math.Abs(mid-float64(ns))/float64(ns) > 0.01 {
			t.Errorf("%d ns: bin %d reads %.0f, more than 1 %% off", ns, b, mid)
		}
	}
	if BinOf(0) != 0 || BinOf(-5) != 0 || BinOf(math.MaxInt64) != NumBins-1 {
		t.Errorf("under/overflow bins wrong: %d %d %d", BinOf(0), BinOf(-5), BinOf(math.MaxInt64))
	}
}

// A stream with known answers: 1000 probes at 100 ms; 900 at 20 ms, 50 at
// 150 ms, 30 at 300 ms, 20 lost; the 150/300 ms and lost ones all in the
// third minute (probes 1200..1799 would be beyond: use probes 600..699).
func knownStream() []model.ProbeSample {
	var out []model.ProbeSample
	for i := range 1000 {
		rtt, load := 20.0, model.LoadIdle
		switch {
		case i >= 600 && i < 650:
			rtt, load = 150, model.LoadUp
		case i >= 650 && i < 680:
			rtt, load = 300, model.LoadUp
		case i >= 680 && i < 700:
			rtt, load = -1, model.LoadUp
		}
		out = append(out, sample(0, i, rtt, load))
	}
	return out
}

func rel(rs []model.Reliability, l int64) model.Reliability {
	for _, r := range rs {
		if r.LNs == l {
			return r
		}
	}
	return model.Reliability{LNs: -1}
}

func TestReliabilityExact(t *testing.T) {
	cfg := Config{Profiles: []model.RequirementProfile{{Name: "p", LatencyNs: 200 * ms, Reliability: 0.9}}}
	rep := analyse(t, cfg, streams("a/stamp"), knownStream())
	if rep.Source != "raw" || len(rep.Stats) != 1 {
		t.Fatalf("source %q, %d streams", rep.Source, len(rep.Stats))
	}
	sr := rep.Stats[0]
	if sr.Sent != 1000 || sr.Lost != 20 {
		t.Fatalf("sent %d lost %d", sr.Sent, sr.Lost)
	}
	for l, want := range map[int64]float64{50 * ms: 0.90, 100 * ms: 0.90, 200 * ms: 0.95, 500 * ms: 0.98, 5 * sec: 0.98} {
		if r := rel(sr.Reliability, l); r.R != want {
			t.Errorf("R(%d ms) = %v, want %v", l/ms, r.R, want)
		}
	}
	r := rel(sr.Reliability, 200*ms)
	lo, _ := Bounds(950, 1000)
	if r.Lower != lo {
		t.Errorf("lower bound %v, want %v", r.Lower, lo)
	}
	// Per load state: idle 900 all ≤ 50 ms; up 100: 50 ≤ 200 ms.
	for _, lr := range sr.ByLoad {
		switch lr.Load {
		case "idle":
			if lr.Sent != 900 || rel(lr.Reliability, 50*ms).R != 1 {
				t.Errorf("idle: %+v", lr)
			}
		case "up-saturated":
			if lr.Sent != 100 || rel(lr.Reliability, 200*ms).R != 0.5 || rel(lr.Reliability, 500*ms).R != 0.8 {
				t.Errorf("up: %+v", lr)
			}
		default:
			t.Errorf("unexpected load state %q", lr.Load)
		}
	}
	// Percentiles, exact nearest rank over the 980 answered: p50 20 ms,
	// p95 (rank 931) 150 ms, p99 (rank 971) 300 ms.
	if sr.RTT.Approx || sr.RTT.P50Ns != 20*ms || sr.RTT.P95Ns != 150*ms || sr.RTT.P99Ns != 300*ms || sr.RTT.MaxNs != 300*ms {
		t.Errorf("RTT stats %+v", sr.RTT)
	}
	// 1-minute windows (600 probes each, stride 1 min): minute 0 holds
	// probes 0..599 (all 20 ms), minute 1 probes 600..999: R(200 ms) =
	// 350/400 = 0.875, the worst, starting at t0 + 1 min.
	var w1 *model.WindowReliability
	for k := range sr.Windows {
		if sr.Windows[k].WindowNs == MinuteNs && sr.Windows[k].LNs == 200*ms {
			w1 = &sr.Windows[k]
		}
	}
	if w1 == nil || w1.Windows != 2 || w1.Worst.R != 0.875 || w1.WorstStartNs != t0+MinuteNs || w1.Max != 1 {
		t.Fatalf("1-min window of R(200 ms): %+v", w1)
	}
	// Profile "p" (200 ms, 90 %): over the range 0.95 with lower bound
	// 0.9347 ≥ 0.9: PASS; per minute: 1.0 (lower 0.995) PASS and 0.875
	// (upper < 0.9?) judged from its interval.
	_, up := Bounds(350, 400)
	wantMinute := model.VerdictInsufficient
	if up < 0.9 {
		wantMinute = model.VerdictFail
	}
	for _, v := range sr.Verdicts {
		switch v.WindowNs {
		case 0:
			if v.Verdict != model.VerdictPass {
				t.Errorf("whole-range verdict %+v", v)
			}
		case MinuteNs:
			if v.Verdict != wantMinute || v.Pass != 1 {
				t.Errorf("1-min verdict %+v, want %s", v, wantMinute)
			}
		}
	}
}

// The rollup path gives the same R(L), windows and counts as the raw path
// (the thresholds match), and percentiles within 1 %.
func TestRollupsMatchRaw(t *testing.T) {
	cfg := Config{}
	samples := knownStream()
	for i := range samples { // spread the answered delays for the percentile check
		if !samples[i].Lost {
			samples[i].RTTNs += int64(i) * 37_000
		}
	}
	raw := analyse(t, cfg, streams("a/stamp"), samples)
	rep, rolls := analyseRollups(t, cfg, streams("a/stamp"), samples)
	if rolls != 2 {
		t.Fatalf("%d rollups, want 2", rolls)
	}
	x, y := raw.Stats[0], rep.Stats[0]
	if !slices.Equal(x.Reliability, y.Reliability) || !slices.Equal(x.Windows, y.Windows) || x.Sent != y.Sent || x.Lost != y.Lost {
		t.Errorf("rollups differ from raw:\n%+v\n%+v", x.Reliability, y.Reliability)
	}
	if !y.RTT.Approx || rep.Source != "rollups" || len(rep.Notes) == 0 {
		t.Errorf("rollup report not marked approximate: %+v %q", y.RTT, rep.Source)
	}
	pairs := [][2]int64{{x.RTT.P5Ns, y.RTT.P5Ns}, {x.RTT.P50Ns, y.RTT.P50Ns}, {x.RTT.P95Ns, y.RTT.P95Ns}, {x.RTT.P99Ns, y.RTT.P99Ns}}
	for _, p := range pairs {
		if math.Abs(float64(p[1]-p[0]))/float64(p[0]) > 0.01 {
			t.Errorf("percentile %d from rollups vs %d exact: over 1 %%", p[1], p[0])
		}
	}
	if math.Abs(x.RTT.MeanNs-y.RTT.MeanNs) > 1 || math.Abs(x.RTT.SDNs-y.RTT.SDNs) > 1 {
		t.Errorf("mean/SD differ: %v/%v vs %v/%v", x.RTT.MeanNs, x.RTT.SDNs, y.RTT.MeanNs, y.RTT.SDNs)
	}
}

func TestOutOfOrderRejected(t *testing.T) {
	a, _ := New(Config{}, streams("a/stamp"))
	if err := a.AddSample(sample(0, 10, 20, model.LoadIdle)); err != nil {
		t.Fatal(err)
	}
	if err := a.AddSample(sample(0, 5, 20, model.LoadIdle)); err == nil {
		t.Error("an older sample was accepted")
	}
	if err := a.AddSample(sample(3, 11, 20, model.LoadIdle)); err == nil {
		t.Error("a stream index beyond the stream list was accepted")
	}
}

// BinOf's fast guess lands every value in the bin whose edges hold it.
func TestBinOfEdges(t *testing.T) {
	for b := 1; b <= histLogBins; b++ {
		lo, hi := binEdges[b-1], BinUpperNs(b)
		for _, v := range []int64{lo, lo + 1, (lo + hi) / 2, hi - 1} {
			if v >= lo && v < hi && BinOf(v) != b {
				t.Fatalf("BinOf(%d) = %d, want %d [%d, %d)", v, BinOf(v), b, lo, hi)
			}
		}
	}
}

// TestLoadedIsItsOwnState: probes sent while the link is loaded but not
// saturated (model.LoadLoaded) get their own R(L), apart from idle and
// from unknown ("no counters"), from raw samples and from rollups alike;
// they open no saturated episode; and a stored load byte this version
// does not know still reads as unknown.
func TestLoadedIsItsOwnState(t *testing.T) {
	var samples []model.ProbeSample
	for i := range 1200 {
		rtt, load := 20.0, model.LoadIdle
		switch {
		case i >= 300 && i < 600: // a steady 50 % load: 60 ms, 1 in 10 over 200 ms
			rtt, load = 60, model.LoadLoaded
			if i%10 == 0 {
				rtt = 250
			}
		case i >= 600 && i < 700: // no counters yet
			rtt, load = 30, model.LoadUnknown
		case i >= 700 && i < 710:
			rtt, load = 30, model.LoadState(200) // a byte from a future version
		}
		samples = append(samples, sample(0, i, rtt, load))
	}
	cfg := Config{}
	raw := analyse(t, cfg, streams("a/stamp"), samples)
	rolled, _ := analyseRollups(t, cfg, streams("a/stamp"), samples)
	for _, rep := range []*model.MonitorReport{raw, rolled} {
		got := map[string]model.LoadReliability{}
		for _, lr := range rep.Stats[0].ByLoad {
			got[lr.Load] = lr
		}
		if l := got["loaded"]; l.Sent != 300 || rel(l.Reliability, 200*ms).R != 0.9 || rel(l.Reliability, 50*ms).R != 0 {
			t.Errorf("%s: loaded %+v; want 300 probes, R(200 ms) 0.9", rep.Source, l)
		}
		if u := got["unknown"]; u.Sent != 110 {
			t.Errorf("%s: unknown %+v; want 110 probes (100 unlabelled, 10 of an unknown byte)", rep.Source, u)
		}
		if i := got["idle"]; i.Sent != 790 || rel(i.Reliability, 50*ms).R != 1 {
			t.Errorf("%s: idle %+v; want 790 probes all within 50 ms", rep.Source, i)
		}
		if len(eventsOf(rep, model.EventLoaded)) != 0 {
			t.Errorf("%s: a loaded (unsaturated) run made a saturated episode: %+v", rep.Source, eventsOf(rep, model.EventLoaded))
		}
	}
}
