package monitor

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// maxRecentAlerts bounds the alert changes /alerts lists.
const maxRecentAlerts = 50

// alert.Alert events read back at a start: those of the last restoreSpan, at
// most restoreEvents (oldest first; a rule that flapped more than that
// in a month loses its oldest changes, not its newest state).
const (
	restoreSpan   = 31 * 24 * time.Hour
	restoreEvents = 100_000
)

// alertEngine is what the daemon asks of the alert engine
// (internal/alert's Evaluator): it feeds final probes and the detectors'
// events, evaluates once a pass, and restores what a past run left firing.
type alertEngine interface {
	Add(s model.ProbeSample)
	Event(ev model.MonitorEvent, atNs int64)
	Eval(atNs int64) []alert.Alert
	Firing() []alert.Alert
	Restore(a alert.Alert, firedAt int64) bool
}

// alertSink is where the daemon sends alert changes besides the log and
// the store (internal/alert's Webhook).
type alertSink interface {
	Send(a alert.Alert)
	Run(ctx context.Context)
}

// watcher runs on the daemon's loop after each pass: it feeds the probes
// that became final since the last pass, in send order, to the alert
// evaluator and the dashboard's series, feeds it the detectors' new
// events, and delivers each alert change to the log and the webhook.
type watcher struct {
	ev     alertEngine
	hook   alertSink // nil: none
	log    *log.Logger
	series *liveSeries
	clock  *clockWatch // wall-clock steps (clockstep.go)
	fedTo  int64       // probes sent before this were fed
	fed    bool
	prev   map[eventKey]bool // the events of the last status snapshot
	buf    []model.ProbeSample

	mu     sync.Mutex
	firing []alert.Alert
	recent []alert.Alert // newest last
}

// AlertsView is what /alerts answers.
type AlertsView struct {
	Rules  []alert.Rule  `json:"rules"`
	Firing []alert.Alert `json:"firing"`
	Recent []alert.Alert `json:"recent"` // the last changes (at most 50), oldest first
}

func newWatcher(plan *Plan, lg *log.Logger) (*watcher, error) {
	ev, err := alert.NewEvaluator(plan.Alerts.Rules, plan.Name, plan.Streams)
	if err != nil {
		return nil, err
	}
	w := &watcher{ev: ev, log: lg, series: newLiveSeries(plan.Streams), prev: map[eventKey]bool{}, clock: newClockWatch(nil)}
	if plan.Alerts.Webhook != "" {
		ext := ""
		if plan.Listen != "off" {
			ext = "http://" + plan.Listen + "/"
		}
		w.hook = alert.NewWebhook(plan.Alerts.Webhook, ext, time.Duration(plan.Alerts.WebhookTimeout), lg)
	}
	return w, nil
}

// start runs the webhook's delivery until ctx ends.
func (w *watcher) start(ctx context.Context, wg *sync.WaitGroup) {
	if w.hook == nil {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); w.hook.Run(ctx) }()
}

// restore runs once at a start, after the restart is recorded and before
// the first pass: it makes the alerts an earlier run left firing firing
// again (alerts_persist.go) and fills the dashboard's series from the
// store (dashboard.go). A store that cannot be read costs the history,
// not the start: one log line.
func (w *watcher) restore(ctx context.Context, c *core, now int64) {
	w.clock.check(now) // the reference the passes compare with
	if err := w.restoreAlerts(ctx, c, now); err != nil {
		w.log.Print(oneLine(err))
	}
	if err := w.seedSeries(ctx, c, now); err != nil {
		w.log.Print(oneLine(err))
	}
}

// pass runs after c.step at now, on the loop's goroutine (it reads
// c.recent). A probe is final once its timeout has passed and the loop
// has drained it: the cut leaves the prober a probe interval and two
// ticks beyond the timeout to declare a loss.
func (w *watcher) pass(c *core, now int64) {
	if ev, ok := w.clock.check(now); ok {
		w.log.Print(ev.Text)
		c.events = append(c.events, ev) // stored with the next batch
		c.mu.Lock()
		c.status.Clock = w.clock.view()
		c.mu.Unlock()
	}
	interval := int64(float64(time.Second) / c.plan.Rate)
	cut := now - c.timeoutNs - 2*int64(tick) - interval
	lag := c.timeoutNs + 4*int64(tick) + interval
	w.buf = w.buf[:0]
	for i := c.recent.Len() - 1; i >= 0; i-- {
		s := c.recent.At(i)
		if w.fed && s.SentNs < w.fedTo-lag {
			break // drained long before: fed by an earlier pass
		}
		if (!w.fed || s.SentNs >= w.fedTo) && s.SentNs < cut {
			w.buf = append(w.buf, s.sample())
		}
	}
	slices.SortFunc(w.buf, func(a, b model.ProbeSample) int {
		if a.SentNs != b.SentNs {
			return int(min(max(a.SentNs-b.SentNs, -1), 1))
		}
		return int(a.Stream - b.Stream)
	})
	for _, s := range w.buf {
		w.ev.Add(s)
	}
	w.series.add(w.buf, cut)
	if cut > w.fedTo || !w.fed {
		w.fedTo, w.fed = cut, true
	}
	// The detectors' events of this pass: those of the status that the
	// last snapshot did not hold.
	c.mu.Lock()
	evs := slices.Clone(c.status.LastEvents)
	c.mu.Unlock()
	next := make(map[eventKey]bool, len(evs))
	for _, e := range evs {
		k := eventKey{e.Kind, e.Stream, e.StartNs}
		next[k] = true
		if !w.prev[k] {
			w.ev.Event(e, now)
		}
	}
	w.prev = next
	w.deliver(c, w.ev.Eval(cut), now)
	firing := w.ev.Firing()
	w.mu.Lock()
	w.firing = firing
	w.mu.Unlock()
}

func (w *watcher) view(rules []alert.Rule) AlertsView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return AlertsView{Rules: rules, Firing: append([]alert.Alert{}, w.firing...), Recent: append([]alert.Alert{}, w.recent...)}
}

// restoreAlerts reads the alert changes stored before this start, makes
// the evaluator's alerts firing again, and resolves (log, webhook, store)
// those no rule matches any more. It runs once, before the first pass.
func (w *watcher) restoreAlerts(ctx context.Context, c *core, now int64) error {
	evs, err := c.st.Events(ctx, c.mid, now-int64(restoreSpan), now+1, restoreEvents)
	if err != nil {
		return fmt.Errorf("alerts: read the stored alerts: %w", err)
	}
	firing, at := alert.FiringFromEvents(evs)
	var gone []alert.Alert
	for i, a := range firing {
		if w.ev.Restore(a, at[i]) {
			w.log.Printf("alert %s: still firing since %s (stored before this start)", a.Rule, time.Unix(0, a.StartsNs).UTC().Format(time.RFC3339))
			continue
		}
		a.Status, a.EndsNs = alert.StatusResolved, max(now, a.StartsNs)
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
func (w *watcher) deliver(c *core, changes []alert.Alert, now int64) {
	if len(changes) == 0 {
		return
	}
	evs := make([]model.MonitorEvent, 0, len(changes))
	for _, a := range changes {
		w.log.Print(alert.Format(a))
		if w.hook != nil {
			w.hook.Send(a)
		}
		evs = append(evs, alert.ToEvent(a, now))
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

// checkAlerts checks the plan's alerts section (a copy: the caller's
// Config is not changed) against its profiles and streams.
func (p *Plan) checkAlerts() error {
	if p.Config.Alerts != nil {
		p.Alerts = *p.Config.Alerts
		if p.Alerts.Rules != nil {
			p.Alerts.Rules = slices.Clone(p.Alerts.Rules)
		}
	}
	if err := p.Alerts.Check(p.Profiles); err != nil {
		return err
	}
	_, err := alert.NewEvaluator(p.Alerts.Rules, p.Name, p.Streams)
	return err
}
