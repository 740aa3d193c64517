package alert

import (
	"slices"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// EventKind is the kind of the event the daemon stores for each alert
// change (firing, resolved), so a restart knows which alerts it had
// fired and resolves them (docs/monitor.md, "Alerts").
const EventKind model.EventKind = "alert"

// ToEvent is the stored form of an alert change: its labels and
// status as flags, its figure as detail, its log line as text. StartNs is
// the alert's start, EndNs when it resolved or, firing, when it fired.
func ToEvent(a Alert, atNs int64) model.MonitorEvent {
	end := atNs
	if a.Status == StatusResolved {
		end = a.EndsNs
	}
	text := Format(a)
	if len(text) > store.MaxEventText {
		text = text[:store.MaxEventText]
	}
	flags := []string{"status=" + a.Status}
	keys := make([]string, 0, len(a.Labels))
	for k := range a.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		flags = append(flags, "label:"+k+"="+a.Labels[k])
	}
	return model.MonitorEvent{Kind: EventKind, StartNs: a.StartsNs, EndNs: max(end, a.StartsNs), Stream: -1, Text: text,
		Detail: map[string]float64{"value": a.Value}, Flags: flags}
}

// FromEvent reads ToEvent's form back (ok false: not one).
func FromEvent(ev model.MonitorEvent) (a Alert, ok bool) {
	if ev.Kind != EventKind {
		return a, false
	}
	a.Labels = map[string]string{}
	for _, f := range ev.Flags {
		if v, ok := strings.CutPrefix(f, "status="); ok {
			a.Status = v
		} else if kv, ok := strings.CutPrefix(f, "label:"); ok {
			k, v, _ := strings.Cut(kv, "=")
			a.Labels[k] = v
		}
	}
	if a.Status != StatusFiring && a.Status != StatusResolved || a.Labels["alertname"] == "" {
		return a, false
	}
	a.Rule, a.Severity, a.Kind = a.Labels["alertname"], a.Labels["severity"], a.Labels["kind"]
	a.StartsNs, a.Value = ev.StartNs, ev.Detail["value"]
	if a.Status == StatusResolved {
		a.EndsNs = ev.EndNs
	}
	if _, rest, ok := strings.Cut(ev.Text, ": "); ok {
		a.Summary = rest
	}
	return a, true
}

// FiringFromEvents folds stored alert changes: the alerts whose last
// change is a firing, with when that was (the event's end).
func FiringFromEvents(evs []model.MonitorEvent) (alerts []Alert, firedAt []int64) {
	type last struct {
		a  Alert
		at int64
	}
	byKey := map[string]last{}
	var order []string
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(x, y model.MonitorEvent) int { return int(min(max(x.EndNs-y.EndNs, -1), 1)) })
	for _, ev := range sorted {
		a, ok := FromEvent(ev)
		if !ok {
			continue
		}
		k := a.key()
		if _, seen := byKey[k]; !seen {
			order = append(order, k)
		}
		// A resolution at the same time as a firing ends it.
		if prev, seen := byKey[k]; seen && prev.at == ev.EndNs && prev.a.Status == StatusResolved && a.Status == StatusFiring {
			continue
		}
		byKey[k] = last{a, ev.EndNs}
	}
	for _, k := range order {
		if l := byKey[k]; l.a.Status == StatusFiring {
			alerts, firedAt = append(alerts, l.a), append(firedAt, l.at)
		}
	}
	return alerts, firedAt
}

// Restore makes a firing alert of an earlier run (read back from the
// store) firing again, as if the evaluator had fired it at firedAt: it is
// resolved when its condition clears (an outage at the first answered
// probe of one of its streams; a reliability rule by its hysteresis; an
// event rule Hold after firedAt). ok is false when no rule and group of
// this evaluator has the alert's labels (the rule was removed or
// changed): the caller resolves it.
func (e *Evaluator) Restore(a Alert, firedAt int64) bool {
	k := a.key()
	for _, rs := range e.rules {
		if rs.rule.Name != a.Rule || rs.rule.Kind != a.Kind {
			continue
		}
		for gi := range rs.groups {
			g := &rs.groups[gi]
			probe := Alert{Labels: g.labels}
			if probe.key() != k {
				continue
			}
			if g.firing {
				return true
			}
			g.firing, g.start, g.value, g.summary = true, a.StartsNs, a.Value, a.Summary
			switch rs.rule.Kind {
			case RuleOutage:
				g.fired = a.StartsNs
			case RuleStep, RuleBufferbloat:
				g.hold = firedAt + int64(rs.rule.Hold)
			}
			return true
		}
	}
	return false
}
