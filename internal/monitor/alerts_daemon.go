package monitor

import (
	"context"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// maxRecentAlerts bounds the alert changes /alerts lists.
const maxRecentAlerts = 50

// watcher runs on the daemon's loop after each pass: it feeds the probes
// that became final since the last pass, in send order, to the alert
// evaluator and the dashboard's series, feeds it the detectors' new
// events, and delivers each alert change to the log and the webhook.
type watcher struct {
	ev     *Evaluator
	hook   *webhook
	log    *log.Logger
	series *liveSeries
	clock  *clockWatch // wall-clock steps (clockstep.go)
	fedTo  int64       // probes sent before this were fed
	fed    bool
	prev   map[eventKey]bool // the events of the last status snapshot
	buf    []model.ProbeSample

	mu     sync.Mutex
	firing []Alert
	recent []Alert // newest last
}

// AlertsView is what /alerts answers.
type AlertsView struct {
	Rules  []AlertRule `json:"rules"`
	Firing []Alert     `json:"firing"`
	Recent []Alert     `json:"recent"` // the last changes (at most 50), oldest first
}

func newWatcher(plan *Plan, lg *log.Logger) (*watcher, error) {
	ev, err := NewEvaluator(plan.Alerts.Rules, plan.Name, plan.Streams)
	if err != nil {
		return nil, err
	}
	w := &watcher{ev: ev, log: lg, series: newLiveSeries(plan.Streams), prev: map[eventKey]bool{}, clock: newClockWatch(nil)}
	if plan.Alerts.Webhook != "" {
		ext := ""
		if plan.Listen != "off" {
			ext = "http://" + plan.Listen + "/"
		}
		w.hook = newWebhook(plan.Alerts.Webhook, ext, time.Duration(plan.Alerts.WebhookTimeout), lg)
	}
	return w, nil
}

// start runs the webhook's delivery until ctx ends.
func (w *watcher) start(ctx context.Context, wg *sync.WaitGroup) {
	if w.hook == nil {
		return
	}
	wg.Add(1)
	go func() { defer wg.Done(); w.hook.run(ctx) }()
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
	for i := len(c.recent) - 1; i >= 0; i-- {
		s := c.recent[i]
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

func (w *watcher) view(rules []AlertRule) AlertsView {
	w.mu.Lock()
	defer w.mu.Unlock()
	return AlertsView{Rules: rules, Firing: append([]Alert{}, w.firing...), Recent: append([]Alert{}, w.recent...)}
}
