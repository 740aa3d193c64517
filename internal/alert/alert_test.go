package alert

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

const t0 = int64(1_767_225_600_000_000_000) // 2026-01-01 UTC, a minute start

var twoTargets = []model.MonitorStream{
	{Target: "198.18.0.1:862", Kind: model.ProbeSTAMP, Name: "198.18.0.1:862/stamp"},
	{Target: "198.18.0.2:862", Kind: model.ProbeSTAMP, Name: "198.18.0.2:862/stamp"},
}

func checked(t *testing.T, rules ...Rule) []Rule {
	t.Helper()
	a := Config{Rules: rules}
	if err := a.Check(nil); err != nil {
		t.Fatal(err)
	}
	return a.Rules
}

// drive feeds 10 probes/s per stream from t0 for secs seconds, rtt(stream,
// sentNs) giving each probe's RTT (-1 lost), evaluating once a second
// after that second's probes; it returns every change.
func drive(e *Evaluator, streams, secs int, rtt func(stream int, ns int64) int64) []Alert {
	var out []Alert
	for sec := range secs {
		for k := range 10 {
			ns := t0 + int64(sec)*1e9 + int64(k)*100e6
			for i := range streams {
				r := rtt(i, ns)
				e.Add(model.ProbeSample{Stream: int32(i), SentNs: ns, RTTNs: r, Lost: r < 0})
			}
		}
		out = append(out, e.Eval(t0+int64(sec+1)*1e9)...)
	}
	return out
}

func between(ns, lo, hi int64) func(int64) bool {
	return func(x int64) bool { return x >= t0+lo*1e9 && x < t0+hi*1e9 }
}

func TestOutageRuleLinkAndStream(t *testing.T) {
	rules := checked(t, Rule{Name: "link", Kind: RuleOutage, For: units.Duration(10 * time.Second)},
		Rule{Name: "per-stream", Kind: RuleOutage, Scope: "stream", For: units.Duration(5 * time.Second), Severity: "info"})
	e, err := NewEvaluator(rules, "home", twoTargets)
	if err != nil {
		t.Fatal(err)
	}
	linkDown := between(0, 60, 75)    // both targets: 15 s
	oneDown := between(0, 100, 108)   // the second target alone: 8 s
	shortBoth := between(0, 130, 136) // both, 6 s: under the link rule's 10 s
	got := drive(e, 2, 200, func(i int, ns int64) int64 {
		if linkDown(ns) || shortBoth(ns) || (i == 1 && oneDown(ns)) {
			return -1
		}
		return 20e6
	})
	var lines []string
	for _, a := range got {
		lines = append(lines, fmt.Sprintf("%s %s %s start=%d end=%d", a.Rule, a.Labels["stream"], a.Status, (a.StartsNs-t0)/1e8, max(a.EndsNs-t0, 0)/1e8))
	}
	want := []string{
		// firing once the outage reaches its For, starting at its first lost probe
		"per-stream 198.18.0.1:862/stamp firing start=600 end=0",
		"per-stream 198.18.0.2:862/stamp firing start=600 end=0",
		"link  firing start=600 end=0",
		// resolved at the first answered probe (75 s), in rule order
		"link  resolved start=600 end=750",
		"per-stream 198.18.0.1:862/stamp resolved start=600 end=750",
		"per-stream 198.18.0.2:862/stamp resolved start=600 end=750",
		"per-stream 198.18.0.2:862/stamp firing start=1000 end=0",
		"per-stream 198.18.0.2:862/stamp resolved start=1000 end=1080",
		"per-stream 198.18.0.1:862/stamp firing start=1300 end=0",
		"per-stream 198.18.0.2:862/stamp firing start=1300 end=0",
		"per-stream 198.18.0.1:862/stamp resolved start=1300 end=1360",
		"per-stream 198.18.0.2:862/stamp resolved start=1300 end=1360",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// The link alert fired when the outage had lasted 10 s (at 70 s).
	for _, a := range got {
		if a.Rule == "link" && a.Status == StatusFiring && (a.Value < 10 || a.Value > 11) {
			t.Errorf("link fired after %g s of outage, want 10", a.Value)
		}
	}
	if len(e.Firing()) != 0 {
		t.Errorf("still firing: %+v", e.Firing())
	}
}

func TestReliabilityRule(t *testing.T) {
	rules := checked(t, Rule{Name: "r200", Kind: RuleReliability, Latency: units.Duration(200 * time.Millisecond), Reliability: 0.98})
	e, err := NewEvaluator(rules, "", twoTargets[:1])
	if err != nil {
		t.Fatal(err)
	}
	upload := between(0, 100, 400) // RTT 430 ms during an upload
	got := drive(e, 1, 1700, func(_ int, ns int64) int64 {
		if upload(ns) {
			return 430e6
		}
		return 19e6
	})
	// Over [t-600 s, t): bad/sent > 2 % from 100 s + 2.04 s of upload on,
	// so at the evaluation of 103 s; at the resolve level (the default
	// margin: 98 % + 1 % = 99 %) once at most 60 of 6000 probes are bad,
	// at 994 s, and resolved after a whole window (10 min) there: 1594 s.
	if len(got) != 2 || got[0].Status != StatusFiring || got[0].StartsNs != t0+103e9 ||
		got[1].Status != StatusResolved || got[1].EndsNs != t0+1594e9 {
		t.Fatalf("changes %+v", got)
	}
	if got[0].Value >= 0.98 || got[1].Value < 0.99 || !strings.Contains(got[0].Summary, "R(200ms) over 10m0s") {
		t.Errorf("values %g, %g, %q", got[0].Value, got[1].Value, got[0].Summary)
	}
}

// TestReliabilityRuleNoFlapping: R(L) hovering at the requirement made
// the rule without hysteresis fire and resolve every few seconds; with
// the resolve margin and hold it fires once, and resolves once R(L) has
// been clear of the requirement for a window.
func TestReliabilityRuleNoFlapping(t *testing.T) {
	rules := checked(t, Rule{Name: "r100", Kind: RuleReliability, Latency: units.Duration(100 * time.Millisecond), Reliability: 0.9,
		Window: units.Duration(time.Minute), MinProbes: 10})
	if m := *rules[0].ResolveMargin; m < 0.0499 || m > 0.0501 || rules[0].ResolveFor != units.Duration(time.Minute) {
		t.Fatalf("defaults: margin %g, resolve_for %v", m, rules[0].ResolveFor)
	}
	e, err := NewEvaluator(rules, "", twoTargets[:1])
	if err != nil {
		t.Fatal(err)
	}
	// For 20 minutes, R(100 ms) over the last minute swings between 88 %
	// and 91 %: minutes with 12 % of the probes over 100 ms alternate
	// with minutes with 9 %. Then 10 minutes clean.
	n := 0
	rtt := func(_ int, ns int64) int64 {
		n++
		if sec := (ns - t0) / 1e9; sec < 1200 && ((sec/60)%2 == 0 && n%25 < 3 || (sec/60)%2 == 1 && n%100 < 9) {
			return 300e6
		}
		return 20e6
	}
	got := drive(e, 1, 1800, rtt)
	// Without hysteresis the same input flaps: count what the bare
	// threshold would do, so the test shows the input does cross it.
	bare := checked(t, Rule{Name: "r100", Kind: RuleReliability, Latency: units.Duration(100 * time.Millisecond), Reliability: 0.9,
		Window: units.Duration(time.Minute), MinProbes: 10, ResolveMargin: new(float64), ResolveFor: units.Duration(time.Second)})
	eb, _ := NewEvaluator(bare, "", twoTargets[:1])
	n = 0
	flaps := drive(eb, 1, 1800, rtt)
	if len(flaps) < 6 {
		t.Fatalf("the input does not cross the requirement often: %d changes without hysteresis", len(flaps))
	}
	if len(got) != 2 || got[0].Status != StatusFiring || got[1].Status != StatusResolved {
		t.Fatalf("%d changes with hysteresis (%d without): %+v", len(got), len(flaps), got)
	}
	// Clean from 1200 s: the window [t−60 s, t) holds at most 30 bad
	// probes (R ≥ 95 %, the resolve level) from t = 1221 s (28 bad in
	// 1169–1199 s), so the alert resolves a minute later.
	if got[1].EndsNs != t0+1281e9 {
		t.Errorf("resolved at %d s, want 1281 s", (got[1].EndsNs-t0)/1e9)
	}
}

// TestReliabilityRuleFor: with for, a dip shorter than it does not fire.
func TestReliabilityRuleFor(t *testing.T) {
	rules := checked(t, Rule{Name: "r", Kind: RuleReliability, Latency: units.Duration(100 * time.Millisecond), Reliability: 0.9,
		Window: units.Duration(time.Minute), MinProbes: 10, For: units.Duration(30 * time.Second)})
	e, _ := NewEvaluator(rules, "", twoTargets[:1])
	// 20 s all bad: R under 90 % from about 7 s in until the window forgets
	// it; a dip of 20 s stays under the requirement for about 74 s, so it
	// fires 30 s after it went under.
	got := drive(e, 1, 200, func(_ int, ns int64) int64 {
		if sec := (ns - t0) / 1e9; sec >= 60 && sec < 80 {
			return -1
		}
		return 20e6
	})
	if len(got) == 0 || got[0].Status != StatusFiring {
		t.Fatalf("changes %+v", got)
	}
	if d := got[0].StartsNs - t0; d != 67e9 {
		t.Errorf("starts at %d s, want 67 s (first evaluation under the requirement)", d/1e9)
	}
	e2, _ := NewEvaluator(checked(t, Rule{Name: "r", Kind: RuleReliability, Latency: units.Duration(100 * time.Millisecond), Reliability: 0.9,
		Window: units.Duration(time.Minute), MinProbes: 10, For: units.Duration(2 * time.Minute)}), "", twoTargets[:1])
	if got := drive(e2, 1, 200, func(_ int, ns int64) int64 {
		if sec := (ns - t0) / 1e9; sec >= 60 && sec < 80 {
			return -1
		}
		return 20e6
	}); len(got) != 0 {
		t.Fatalf("fired on a dip shorter than for: %+v", got)
	}
}

func TestReliabilityRuleFromProfileNeedsProbes(t *testing.T) {
	rules := checked(t, Rule{Name: "dispatch", Kind: RuleReliability, Profile: "dispatch-storage", MinProbes: 1000, Window: units.Duration(time.Hour)})
	if rules[0].Latency != units.Duration(5*time.Second) || rules[0].Reliability != 0.995 {
		t.Fatalf("profile not applied: %+v", rules[0])
	}
	e, _ := NewEvaluator(rules, "", twoTargets[:1])
	// Everything lost, but fewer than 1000 probes in the window until 100 s.
	got := drive(e, 1, 120, func(int, int64) int64 { return -1 })
	if len(got) != 1 || got[0].StartsNs != t0+100e9 {
		t.Fatalf("changes %+v", got)
	}
}

func TestEventRules(t *testing.T) {
	rules := checked(t,
		Rule{Name: "step", Kind: RuleStep, MinStep: units.Duration(5 * time.Millisecond), Hold: units.Duration(time.Minute)},
		Rule{Name: "bloat", Kind: RuleBufferbloat, Grade: "D"})
	e, err := NewEvaluator(rules, "", twoTargets)
	if err != nil {
		t.Fatal(err)
	}
	at := t0 + 600e9
	// Ignored: an artefact, a step too small, a grade too good.
	e.Event(model.MonitorEvent{Kind: model.EventBaselineStep, Stream: 0, StartNs: t0, Detail: map[string]float64{"step_ms": 100}, Flags: []string{"probable-artefact"}}, at)
	e.Event(model.MonitorEvent{Kind: model.EventBaselineStep, Stream: 0, StartNs: t0, Detail: map[string]float64{"step_ms": 2}}, at)
	e.Event(model.MonitorEvent{Kind: model.EventLoaded, Stream: 1, StartNs: t0, Detail: map[string]float64{"added_median_ms": 150}, Flags: []string{"up-saturated", "grade=C"}}, at)
	if got := e.Eval(at + 1e9); len(got) != 0 {
		t.Fatalf("fired on ignored events: %+v", got)
	}
	e.Event(model.MonitorEvent{Kind: model.EventBaselineStep, Stream: 0, StartNs: t0 + 60e9, Text: "baseline step of +12.0 ms", Detail: map[string]float64{"step_ms": 12}}, at)
	e.Event(model.MonitorEvent{Kind: model.EventLoaded, Stream: 1, StartNs: t0 + 30e9, Text: "loaded episode", Detail: map[string]float64{"added_median_ms": 411}, Flags: []string{"up-saturated", "grade=F"}}, at)
	got := e.Eval(at + 1e9)
	if len(got) != 2 || got[0].Rule != "step" || got[0].Labels["stream"] != twoTargets[0].Name || got[0].Value != 12 || got[0].StartsNs != t0+60e9 ||
		got[1].Rule != "bloat" || got[1].Labels["stream"] != twoTargets[1].Name || got[1].Value != 411 {
		t.Fatalf("firing %+v", got)
	}
	// The same step again within the hold: no second firing, the hold extends.
	e.Event(model.MonitorEvent{Kind: model.EventBaselineStep, Stream: 0, StartNs: t0 + 60e9, Detail: map[string]float64{"step_ms": 12}}, at+30e9)
	if got := e.Eval(at + 61e9); len(got) != 0 {
		t.Fatalf("changes within the hold: %+v", got)
	}
	got = e.Eval(at + 91e9)
	if len(got) != 1 || got[0].Rule != "step" || got[0].Status != StatusResolved || got[0].EndsNs != at+91e9 {
		t.Fatalf("step not resolved after its hold: %+v", got)
	}
	got = e.Eval(at + 15*60e9)
	if len(got) != 1 || got[0].Rule != "bloat" || got[0].Status != StatusResolved {
		t.Fatalf("bufferbloat not resolved after 15 min: %+v", got)
	}
}

func FuzzAlertConfig(f *testing.F) {
	f.Add(`{"rules": [{"name": "o", "kind": "outage", "scope": "target", "for": "30s"}], "webhook": "http://198.18.0.9/hook"}`)
	f.Add(`{"rules": [{"name": "r", "kind": "reliability", "profile": "metering", "window": "1h"}]}`)
	f.Add(`{"rules": [{"name": "b", "kind": "bufferbloat", "grade": "A+", "hold": "1m"}, {"name": "s", "kind": "baseline-step", "artefacts": true}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var a Config
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if dec.Decode(&a) != nil {
			return
		}
		if err := a.Check(nil); err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		e, err := NewEvaluator(a.Rules, "m", twoTargets)
		if err != nil {
			return
		}
		// A valid rule set evaluates without trouble over a short feed.
		for i := range int64(50) {
			e.Add(model.ProbeSample{Stream: int32(i % 2), SentNs: t0 + i*1e8, RTTNs: -1, Lost: true})
			e.Event(model.MonitorEvent{Kind: model.EventLoaded, Stream: int32(i % 2), Flags: []string{"grade=F"}}, t0+i*1e8)
			e.Eval(t0 + i*1e8)
		}
	})
}
