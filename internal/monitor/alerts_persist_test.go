package monitor

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/store"
)

// runFor pushes one probe each 100 ms of [from, to) (rtt −1: lost) into
// c's ring and runs the loop (step, then the watcher's pass) each second.
func runFor(c *core, w *watcher, from, to int64, rtt int64) {
	ctx := context.Background()
	for sec := from; sec < to; sec += 1e9 {
		for k := int64(0); k < 10; k++ {
			ns := sec + k*100e6
			s := model.ProbeSample{Stream: 0, Seq: uint32((ns - t0) / 100e6), SentNs: ns, RTTNs: rtt, Lost: rtt < 0}
			c.ring.Push(s)
		}
		c.step(ctx, sec+1e9, false)
		w.pass(c, sec+1e9)
	}
}

// TestAlertsSurviveRestart: a link outage fires, the daemon dies (no
// clean stop) and starts again while the outage goes on; the new run
// knows the alert is firing (/alerts), does not fire it twice, and
// resolves it when probes are answered again: the webhook gets the
// resolution with endsAt, the store both changes. Without the stored
// alert events the restarted daemon never resolved it.
func TestAlertsSurviveRestart(t *testing.T) {
	var mu sync.Mutex
	var got []alert.WebhookMessage
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var m alert.WebhookMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Error(err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	defer srv.Close()
	c, fs := testCore(t, 200*time.Millisecond)
	c.plan.Alerts.Webhook = srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	lg := log.New(t.Output(), "", 0) // its lines in the test's output

	w, err := newWatcher(c.plan, lg)
	if err != nil {
		t.Fatal(err)
	}
	w.start(ctx, &wg)
	if err := c.restart(ctx, t0); err != nil {
		t.Fatal(err)
	}
	w.restore(ctx, c, t0)
	runFor(c, w, t0, t0+20e9, 20e6)
	runFor(c, w, t0+20e9, t0+60e9, -1) // down from 20 s
	if f := w.view(nil).Firing; len(f) != 1 || f[0].Rule != "link-outage" {
		t.Fatalf("firing before the restart: %+v", f)
	}

	// A kill -9: no final step. A new core and watcher on the same store.
	c2 := newCore(c.plan, fs, c.mid, probe.NewRing(0), log.New(io.Discard, "", 0))
	w2, err := newWatcher(c.plan, lg)
	if err != nil {
		t.Fatal(err)
	}
	w2.start(ctx, &wg)
	restartAt := t0 + 90e9
	if err := c2.restart(ctx, restartAt); err != nil {
		t.Fatal(err)
	}
	w2.restore(ctx, c2, restartAt)
	f := w2.view(nil).Firing
	if len(f) != 1 || f[0].Rule != "link-outage" || f[0].StartsNs != t0+20e9 {
		t.Fatalf("firing after the restart: %+v (the log is above)", f)
	}
	runFor(c2, w2, restartAt, restartAt+10e9, -1) // still down: no second firing
	runFor(c2, w2, restartAt+10e9, restartAt+20e9, 20e6)
	if f := w2.view(nil).Firing; len(f) != 0 {
		t.Fatalf("still firing after the link came back: %+v", f)
	}
	// Stored: firing, then resolved at the first answered probe (100 s).
	evs, err := fs.Events(ctx, c.mid, t0, t0+1000e9, 100)
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, ev := range evs {
		if a, ok := alert.FromEvent(ev); ok {
			status = append(status, a.Status)
			t.Logf("%s start %d end %d: %s", a.Status, (a.StartsNs-t0)/1e6, (a.EndsNs-t0)/1e6, a.Summary)
			if a.Status == alert.StatusResolved && a.EndsNs != restartAt+10e9 {
				t.Errorf("resolved at %d s, want 100 s", (a.EndsNs-t0)/1e9)
			}
		}
	}
	if strings.Join(status, ",") != "firing,resolved" {
		t.Fatalf("stored alert changes %v", status)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Status != alert.StatusFiring || got[1].Status != alert.StatusResolved {
		t.Fatalf("webhook got %+v", got)
	}
	a := got[1].Alerts[0]
	if !a.EndsAt.Equal(time.Unix(0, restartAt+10e9).UTC()) || !a.StartsAt.Equal(time.Unix(0, t0+20e9).UTC()) {
		t.Errorf("resolved alert startsAt %v endsAt %v", a.StartsAt, a.EndsAt)
	}
}

// TestRestoredAlertOfRemovedRuleResolved: an alert left firing by a rule
// the new configuration lacks is resolved at the start.
func TestRestoredAlertOfRemovedRuleResolved(t *testing.T) {
	c, fs := testCore(t, 200*time.Millisecond)
	ctx := context.Background()
	old := alert.Alert{Rule: "gone", Severity: "warning", Kind: alert.RuleOutage, Status: alert.StatusFiring, StartsNs: t0,
		Labels: map[string]string{"alertname": "gone", "severity": "warning", "kind": alert.RuleOutage, "scope": "link"}, Summary: "outage"}
	if err := fs.Write(ctx, c.mid, &store.Batch{Events: []model.MonitorEvent{alert.ToEvent(old, t0+10e9)}}); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	w, err := newWatcher(c.plan, log.New(&logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	w.restore(ctx, c, t0+60e9)
	if f := w.view(nil).Firing; len(f) != 0 {
		t.Fatalf("firing %+v", f)
	}
	evs, _ := fs.Events(ctx, c.mid, t0, t0+1000e9, 100)
	firing, _ := alert.FiringFromEvents(evs)
	if len(firing) != 0 || !strings.Contains(logs.String(), "alert gone [warning] RESOLVED") {
		t.Fatalf("not resolved: %+v\n%s", firing, logs.String())
	}
}
