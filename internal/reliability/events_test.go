package reliability

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

func eventsOf(rep *model.MonitorReport, k model.EventKind) []model.MonitorEvent {
	var out []model.MonitorEvent
	for _, e := range rep.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Two targets with two streams each, probes every 100 ms for 5 min: the
// link down 30 s (every stream), target b down 5 s, a/icmp alone 2 s, and
// a 2-probe loss that is no outage.
func TestOutages(t *testing.T) {
	ss := streams("a/stamp", "a/icmp", "b/stamp", "b/icmp")
	var samples []model.ProbeSample
	for i := range 3000 {
		for s := range int32(4) {
			lost := i >= 1000 && i < 1300 ||
				(s >= 2 && i >= 2000 && i < 2050) ||
				(s == 1 && i >= 2500 && i < 2520) ||
				(s == 0 && i >= 2700 && i < 2702)
			rtt := 20.0
			if lost {
				rtt = -1
			}
			samples = append(samples, sample(s, i, rtt, model.LoadUnknown))
		}
	}
	rep := analyse(t, Config{}, ss, samples)
	out := eventsOf(rep, model.EventOutage)
	want := []struct {
		stream     int32
		scope      string
		start, end int64
		lost       float64
	}{
		{-1, "link", t0 + 100*sec, t0 + 130*sec, 1200},
		{2, "target", t0 + 200*sec, t0 + 205*sec, 100},
		{1, "stream", t0 + 250*sec, t0 + 252*sec, 20},
	}
	if len(out) != len(want) {
		t.Fatalf("%d outages, want %d: %+v", len(out), len(want), out)
	}
	for k, w := range want {
		e := out[k]
		if e.Stream != w.stream || e.Flags[0] != w.scope || e.StartNs != w.start || e.EndNs != w.end || e.Detail["probes_lost"] != w.lost {
			t.Errorf("outage %d: %+v, want %+v", k, e, w)
		}
	}
	if d := out[0].Detail["duration_s"]; d != 30 {
		t.Errorf("link outage lasted %v s, want 30", d)
	}
}

// An outage still running at the end of the range is closed there and
// flagged open.
func TestOutageOpenAtEnd(t *testing.T) {
	var samples []model.ProbeSample
	for i := range 100 {
		rtt := 20.0
		if i >= 50 {
			rtt = -1
		}
		samples = append(samples, sample(0, i, rtt, model.LoadIdle))
	}
	rep := analyse(t, Config{}, streams("a/stamp"), samples)
	out := eventsOf(rep, model.EventOutage)
	if len(out) != 1 || out[0].StartNs != t0+5*sec || !slices.Contains(out[0].Flags, "open") {
		t.Fatalf("open outage: %+v", out)
	}
}

// rttAt builds a stream from a function of the probe index (100 ms
// apart); a negative value is a lost probe.
func rttAt(n int, f func(i int) float64) []model.ProbeSample {
	out := make([]model.ProbeSample, 0, n)
	for i := range n {
		out = append(out, sample(0, i, f(i), model.LoadUnknown))
	}
	return out
}

const perMin = 600 // probes per minute at 100 ms

func jitter(i int) float64 { return float64(i%7) * 0.3 }

// Seed 001's fake step: after a 30 s outage the tool's replies were
// matched to the wrong probes, +100 ms for good. The step is reported,
// flagged probable-artefact and after-outage; the drain transient right
// after the outage makes no step of its own; a real +20 ms step later is
// reported unflagged.
func TestBaselineStepAfterOutage(t *testing.T) {
	rep := analyse(t, Config{}, streams("a/stamp"), rttAt(60*perMin, func(i int) float64 {
		m := float64(i) / perMin
		switch {
		case m < 15:
			return 20 + jitter(i)
		case m < 15.5:
			return -1
		case m < 16.7:
			return 200 + jitter(i) // the queue draining after the outage
		case m < 45:
			return 120 + jitter(i)
		}
		return 140 + jitter(i)
	}))
	steps := eventsOf(rep, model.EventBaselineStep)
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2: %+v", len(steps), steps)
	}
	fake, real := steps[0], steps[1]
	if fake.StartNs != t0+17*MinuteNs || !near(fake.Detail["step_ms"], 100, 1) ||
		!slices.Contains(fake.Flags, "probable-artefact") || !slices.Contains(fake.Flags, "after-outage") {
		t.Errorf("fake step: %+v", fake)
	}
	if real.StartNs != t0+45*MinuteNs || !near(real.Detail["step_ms"], 20, 1) || len(real.Flags) != 0 {
		t.Errorf("real step: %+v", real)
	}
}

// An outage followed by a drain transient and the old level is no step.
func TestNoStepFromOutageTransient(t *testing.T) {
	rep := analyse(t, Config{}, streams("a/stamp"), rttAt(30*perMin, func(i int) float64 {
		m := float64(i) / perMin
		switch {
		case m >= 10 && m < 10.5:
			return -1
		case m >= 10.5 && m < 11.9:
			return 300
		}
		return 20 + jitter(i)
	}))
	if steps := eventsOf(rep, model.EventBaselineStep); len(steps) != 0 {
		t.Errorf("steps from a transient: %+v", steps)
	}
	if out := eventsOf(rep, model.EventOutage); len(out) != 1 || out[0].EndNs-out[0].StartNs != 30*sec {
		t.Errorf("outage: %+v", out)
	}
}

// loadedScenario: 60 s idle at 19 ms, 60 s loaded with the queue delay
// q(phase) (ms; negative: the probe is lost), 60 s idle.
func loadedScenario(label bool, q func(i int) float64) []model.ProbeSample {
	var out []model.ProbeSample
	for i := range 1800 {
		rtt, load := 19+jitter(i)/3, model.LoadIdle
		if i >= 600 && i < 1200 {
			load = model.LoadUp
			if d := q(i - 600); d < 0 {
				rtt = -1
			} else {
				rtt = 19 + d
			}
		}
		if !label {
			load = model.LoadUnknown
		}
		out = append(out, sample(0, i, rtt, load))
	}
	return out
}

// adslSawtooth is seed 001's uplink: 0.7 Mbit/s, a drop-tail buffer of
// 430 ms (301 kbit) filled by a CUBIC upload: the queue delay climbs from
// 250 ms to the 430 ms ceiling over 6 s, the probe arriving at the full
// buffer is dropped, the sender backs off.
func adslSawtooth(i int) float64 {
	ph := i % 60
	if ph == 59 {
		return -1
	}
	return 250 + 180*float64(ph)/58
}

func oneEpisode(t *testing.T, rep *model.MonitorReport) model.MonitorEvent {
	t.Helper()
	eps := eventsOf(rep, model.EventLoaded)
	if len(eps) != 1 {
		t.Fatalf("%d loaded episodes, want 1: %+v", len(eps), eps)
	}
	return eps[0]
}

func TestLoadedADSLDropTail(t *testing.T) {
	for _, label := range []bool{true, false} {
		cfg := Config{Loaded: LoadedConfig{UpBps: 0.7e6}}
		ep := oneEpisode(t, analyse(t, cfg, streams("a/stamp"), loadedScenario(label, adslSawtooth)))
		if ep.StartNs != t0+60*sec || ep.EndNs < t0+120*sec || ep.EndNs > t0+120*sec+100*ms {
			t.Errorf("label %v: episode %v..%v, want 60 s..120 s", label, time.Duration(ep.StartNs-t0), time.Duration(ep.EndNs-t0))
		}
		if !slices.Contains(ep.Flags, "queue="+QueueDropTail) {
			t.Errorf("label %v: flags %v, want drop-tail", label, ep.Flags)
		}
		if !label {
			// Without load labels there is no direction, so no capacity.
			if !slices.Contains(ep.Flags, "elevated-delay") {
				t.Errorf("unlabelled episode flags %v", ep.Flags)
			}
			continue
		}
		b := ep.Detail["buffer_bits"]
		if math.Abs(b-301e3)/301e3 > 0.10 {
			t.Errorf("inferred buffer %.0f bit, want 301 kbit ± 10 %%", b)
		}
		if bdp := ep.Detail["bdp_bits"]; !near(bdp, 0.7e6*0.019, 0.7e6*0.0005) {
			t.Errorf("BDP %.0f bit, want ≈ 13.3 kbit", bdp)
		}
		if o := ep.Detail["oversize"]; o < 20 || o > 25 {
			t.Errorf("oversize %.1f, want ≈ 22", o)
		}
		if !slices.Contains(ep.Flags, "grade=D") || !slices.Contains(ep.Flags, "up-saturated") {
			t.Errorf("flags %v, want grade=D (≈ 340 ms added median), up-saturated", ep.Flags)
		}
		t.Logf("ADSL: %s", ep.Text)
	}
}

func TestLoadedAQMAndFQ(t *testing.T) {
	// CoDel-like: the standing queue kept near its 5 ms target, bursts to
	// ~15 ms, an occasional drop anywhere.
	codel := func(i int) float64 {
		if i%97 == 50 {
			return -1
		}
		return 5 + float64(i%10)
	}
	// FQ-like: the probes' own flow queue stays empty; ≤ 2.5 ms.
	fq := func(i int) float64 { return 0.5 + float64(i%5)*0.5 }
	for _, c := range []struct {
		name  string
		q     func(int) float64
		class string
	}{{"codel", codel, QueueAQM}, {"fq", fq, QueueFQ}} {
		ep := oneEpisode(t, analyse(t, Config{}, streams("a/stamp"), loadedScenario(true, c.q)))
		if !slices.Contains(ep.Flags, "queue="+c.class) {
			t.Errorf("%s: flags %v, want %s (%s)", c.name, ep.Flags, c.class, ep.Text)
		}
	}
}

// On a slow link the packet in service alone delays a probe by up to one
// MTU's serialisation (17 ms at 0.7 Mbit/s): FQ-CoDel's added delay on
// the adsl lab read p95 16.6 ms and CoDel's 65.8 ms (test/monitor). With
// the capacity, the bounds grow by one and two MTU times; without it, the
// fixed bounds hold.
func TestLoadedSlowLinkBounds(t *testing.T) {
	fq := func(i int) float64 { return float64(i%18) * 0.95 }    // 0-16 ms: one 1500 B packet ahead
	codel := func(i int) float64 { return 20 + float64(i%10)*5 } // 20-65 ms: a few packets standing
	for _, c := range []struct {
		name  string
		q     func(int) float64
		upBps float64
		class string
	}{
		{"fq slow", fq, 0.7e6, QueueFQ}, {"codel slow", codel, 0.7e6, QueueAQM},
		{"fq no capacity", fq, 0, QueueAQM}, {"fq fast", fq, 100e6, QueueAQM},
	} {
		cfg := Config{Loaded: LoadedConfig{UpBps: c.upBps}}
		ep := oneEpisode(t, analyse(t, cfg, streams("a/stamp"), loadedScenario(true, c.q)))
		if !slices.Contains(ep.Flags, "queue="+c.class) {
			t.Errorf("%s: flags %v, want %s (%s)", c.name, ep.Flags, c.class, ep.Text)
		}
	}
}

// A byte-limited drop-tail buffer admits small probes when it refuses a
// full segment: no probe is lost at the peaks, and the sawtooth's sharp
// falls (the sender backing off) confirm drop-tail. A deep queue without
// losses or falls stays "bloated".
func TestLoadedSawtoothWithoutProbeLoss(t *testing.T) {
	noLoss := func(i int) float64 { return math.Max(adslSawtooth(i), 0) }
	flat := func(i int) float64 { return 400 + float64(i%7) }
	for _, c := range []struct {
		name  string
		q     func(int) float64
		class string
	}{{"sawtooth, no probe lost", noLoss, QueueDropTail}, {"deep and flat", flat, QueueBloated}} {
		ep := oneEpisode(t, analyse(t, Config{Loaded: LoadedConfig{UpBps: 0.7e6}}, streams("a/stamp"), loadedScenario(true, c.q)))
		if !slices.Contains(ep.Flags, "queue="+c.class) {
			t.Errorf("%s: flags %v, want %s (%s)", c.name, ep.Flags, c.class, ep.Text)
		}
	}
}
