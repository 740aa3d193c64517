package alert

import (
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestAlertEventRoundTrip: the stored form reads back to the same alert.
func TestAlertEventRoundTrip(t *testing.T) {
	a := Alert{Rule: "r", Severity: "critical", Kind: RuleReliability, Status: StatusResolved, StartsNs: t0, EndsNs: t0 + 5e9, Value: 0.97,
		Labels:  map[string]string{"alertname": "r", "severity": "critical", "kind": RuleReliability, "scope": "stream", "stream": "a b=c", "target": "x"},
		Summary: "R(200ms) is back"}
	b, ok := FromEvent(ToEvent(a, t0+9e9))
	if !ok || b.key() != a.key() || b.Status != a.Status || b.StartsNs != a.StartsNs || b.EndsNs != a.EndsNs || b.Value != a.Value ||
		b.Summary != a.Summary || b.Labels["stream"] != "a b=c" {
		t.Fatalf("%+v\n%+v", a, b)
	}
}

// FuzzAlertFromEvent: stored events are read back at every start; any
// event (a damaged or foreign row) reads as an alert or as none, without
// a panic, and what reads as one folds and restores without one.
func FuzzAlertFromEvent(f *testing.F) {
	f.Add("status=firing", "label:alertname=link-outage", "label:scope=link", "alert x [w] FIRING at T: outage", int64(5), int64(9))
	f.Add("status=resolved", "label:alertname=r", "label:stream=a=b", "", int64(-1), int64(0))
	f.Add("status=", "label:", "label:=", ": : :", int64(0), int64(1<<62))
	evals, _ := NewEvaluator(DefaultRules(), "", twoTargets)
	f.Fuzz(func(t *testing.T, f1, f2, f3, text string, start, end int64) {
		ev := model.MonitorEvent{Kind: EventKind, StartNs: start, EndNs: end, Stream: -1, Text: text, Flags: []string{f1, f2, f3},
			Detail: map[string]float64{"value": 1}}
		a, ok := FromEvent(ev)
		if ok && (a.Rule == "" || a.Status != StatusFiring && a.Status != StatusResolved) {
			t.Fatalf("read %+v", a)
		}
		firing, at := FiringFromEvents([]model.MonitorEvent{ev, ev})
		for i, a := range firing {
			evals.Restore(a, at[i])
		}
		evals.Eval(end)
	})
}
