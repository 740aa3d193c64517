package monitor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// EventAlert is the kind of the event the daemon stores for each alert
// change (firing, resolved), so a restart knows which alerts it had
// fired and resolves them (docs/monitor.md, "Alerts").
const EventAlert model.EventKind = "alert"

// Alert events read back at a start: those of the last restoreSpan, at
// most restoreEvents (oldest first; a rule that flapped more than that
// in a month loses its oldest changes, not its newest state).
const (
	restoreSpan   = 31 * 24 * time.Hour
	restoreEvents = 100_000
)

// alertEvent is the stored form of an alert change: its labels and
// status as flags, its figure as detail, its log line as text. StartNs is
// the alert's start, EndNs when it resolved or, firing, when it fired.
func alertEvent(a Alert, atNs int64) model.MonitorEvent {
	end := atNs
	if a.Status == AlertResolved {
		end = a.EndsNs
	}
	text := FormatAlert(a)
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
	return model.MonitorEvent{Kind: EventAlert, StartNs: a.StartsNs, EndNs: max(end, a.StartsNs), Stream: -1, Text: text,
		Detail: map[string]float64{"value": a.Value}, Flags: flags}
}

// alertFromEvent reads alertEvent's form back (ok false: not one).
func alertFromEvent(ev model.MonitorEvent) (a Alert, ok bool) {
	if ev.Kind != EventAlert {
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
	if a.Status != AlertFiring && a.Status != AlertResolved || a.Labels["alertname"] == "" {
		return a, false
	}
	a.Rule, a.Severity, a.Kind = a.Labels["alertname"], a.Labels["severity"], a.Labels["kind"]
	a.StartsNs, a.Value = ev.StartNs, ev.Detail["value"]
	if a.Status == AlertResolved {
		a.EndsNs = ev.EndNs
	}
	if _, rest, ok := strings.Cut(ev.Text, ": "); ok {
		a.Summary = rest
	}
	return a, true
}

// firingFromEvents folds stored alert changes: the alerts whose last
// change is a firing, with when that was (the event's end).
func firingFromEvents(evs []model.MonitorEvent) (alerts []Alert, firedAt []int64) {
	type last struct {
		a  Alert
		at int64
	}
	byKey := map[string]last{}
	var order []string
	sorted := slices.Clone(evs)
	slices.SortStableFunc(sorted, func(x, y model.MonitorEvent) int { return int(min(max(x.EndNs-y.EndNs, -1), 1)) })
	for _, ev := range sorted {
		a, ok := alertFromEvent(ev)
		if !ok {
			continue
		}
		k := a.key()
		if _, seen := byKey[k]; !seen {
			order = append(order, k)
		}
		// A resolution at the same time as a firing ends it.
		if prev, seen := byKey[k]; seen && prev.at == ev.EndNs && prev.a.Status == AlertResolved && a.Status == AlertFiring {
			continue
		}
		byKey[k] = last{a, ev.EndNs}
	}
	for _, k := range order {
		if l := byKey[k]; l.a.Status == AlertFiring {
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

// restoreAlerts reads the alert changes stored before this start, makes
// the evaluator's alerts firing again, and resolves (log, webhook, store)
// those no rule matches any more. It runs once, before the first pass.
func (w *watcher) restoreAlerts(ctx context.Context, c *core, now int64) error {
	evs, err := c.st.Events(ctx, c.mid, now-int64(restoreSpan), now+1, restoreEvents)
	if err != nil {
		return fmt.Errorf("alerts: read the stored alerts: %w", err)
	}
	firing, at := firingFromEvents(evs)
	var gone []Alert
	for i, a := range firing {
		if w.ev.Restore(a, at[i]) {
			w.log.Printf("alert %s: still firing since %s (stored before this start)", a.Rule, time.Unix(0, a.StartsNs).UTC().Format(time.RFC3339))
			continue
		}
		a.Status, a.EndsNs = AlertResolved, max(now, a.StartsNs)
		a.Summary = "the rule is no longer configured: resolved at the start"
		gone = append(gone, a)
	}
	w.deliver(c, gone, now)
	w.mu.Lock()
	w.firing = w.ev.Firing()
	w.mu.Unlock()
	return nil
}

// deliver sends alert changes to the log and the webhook and stores
// them (at once: the next batch may never come if the daemon stops).
func (w *watcher) deliver(c *core, changes []Alert, now int64) {
	if len(changes) == 0 {
		return
	}
	evs := make([]model.MonitorEvent, 0, len(changes))
	for _, a := range changes {
		w.log.Print(FormatAlert(a))
		if w.hook != nil {
			w.hook.send(a)
		}
		evs = append(evs, alertEvent(a, now))
	}
	// While the store fails, the loop's batch holds and retries them with
	// the rest; a write failing here goes the same way.
	stored := false
	if c.failSince == 0 {
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		stored = c.st.Write(wctx, c.mid, &store.Batch{Events: evs}) == nil
		cancel()
	}
	if !stored {
		c.events = append(c.events, evs...)
	}
	w.mu.Lock()
	w.recent = append(w.recent, changes...)
	if n := len(w.recent) - maxRecentAlerts; n > 0 {
		w.recent = append(w.recent[:0], w.recent[n:]...)
	}
	w.mu.Unlock()
}
