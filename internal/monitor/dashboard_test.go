package monitor

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/alert"
	"github.com/sonde-project/sonde/internal/monitor/probe"
)

// TestDashboardEndpoints drives a core and its watcher by hand over three
// minutes with a 20 s outage, then fetches the page, its script and the
// JSON endpoints.
func TestDashboardEndpoints(t *testing.T) {
	c, _ := testCore(t, time.Second)
	var logs strings.Builder
	w, err := newWatcher(c.plan, log.New(&logs, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.restart(ctx, t0); err != nil {
		t.Fatal(err)
	}
	// 10 probes/s; 19 ms, or 430 ms in minute 1; lost from 150 s to 170 s.
	seq := uint32(0)
	for sec := int64(1); sec <= 200; sec++ {
		for ; int64(seq) < sec*10-20 && seq < 2400; seq++ { // a probe is drained 2 s after its send
			rtt := int64(19e6)
			if seq >= 600 && seq < 1200 {
				rtt = 430e6
			}
			if seq >= 1500 && seq < 1700 {
				rtt = -1
			}
			c.ring.Push(sample(seq, rtt))
		}
		now := t0 + sec*1e9
		c.step(ctx, now, false)
		w.pass(c, now)
	}
	srv := httptest.NewServer(w.handler(c, c.plan.Alerts.Rules))
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, page := get("/")
	if resp.StatusCode != 200 || !strings.Contains(page, `<script type="module" src="monitor.js">`) ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") || strings.Contains(page, "http") {
		t.Fatalf("page %d %q: %.200s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), page)
	}
	for _, p := range []string{"/monitor.js", "/monitor.css"} {
		if resp, b := get(p); resp.StatusCode != 200 || len(b) < 100 {
			t.Errorf("%s: %d, %d bytes", p, resp.StatusCode, len(b))
		}
	}
	if resp, _ := get("/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz behind the dashboard: %d", resp.StatusCode)
	}
	if resp, _ := get("/nosuch"); resp.StatusCode != 404 {
		t.Errorf("/nosuch: %d", resp.StatusCode)
	}

	_, body := get("/series")
	var se DashboardSeries
	if err := json.Unmarshal([]byte(body), &se); err != nil {
		t.Fatal(err)
	}
	// Final up to 200 s − timeout − 2 s − 0.1 s: minutes 0-2 closed, 3 partial.
	if len(se.Streams) != 1 || len(se.Streams[0].Points) != 4 {
		t.Fatalf("series %s", body)
	}
	p := se.Streams[0].Points
	if p[0].Sent != 600 || p[0].Lost != 0 || p[0].P50Ms != 19 || p[1].P50Ms != 430 || p[1].P99Ms != 430 || p[1].Partial ||
		p[2].Partial || p[2].Lost != 200 || p[2].StartNs != t0+120e9 || !p[3].Partial || p[3].Sent != 169 {
		t.Fatalf("points %+v", p)
	}
	// R(200 ms) over the last 10 minutes: 600 slow and 200 lost of the sent.
	var r200 *float64
	for i, l := range se.ThresholdsMs {
		if l == 200 {
			r := se.Streams[0].R10[i]
			if r.OK != r.Sent-800 {
				t.Errorf("R(200ms) %+v", r)
			}
			r200 = &r.R
		}
	}
	if r200 == nil {
		t.Fatalf("no 200 ms threshold in %v", se.ThresholdsMs)
	}

	// The default rule: a link outage of ≥ 10 s fired and resolved.
	_, body = get("/alerts")
	var av AlertsView
	if err := json.Unmarshal([]byte(body), &av); err != nil {
		t.Fatal(err)
	}
	if len(av.Recent) != 2 || av.Recent[0].Status != alert.StatusFiring || av.Recent[0].StartsNs != t0+150e9 ||
		av.Recent[1].Status != alert.StatusResolved || av.Recent[1].EndsNs != t0+170e9 || len(av.Firing) != 0 || len(av.Rules) != 1 {
		t.Fatalf("alerts %s", body)
	}
	if n := strings.Count(logs.String(), "alert link-outage [critical]"); n != 2 {
		t.Errorf("%d log lines for the alert:\n%s", n, logs.String())
	}
}

// TestDashboardSeriesAfterRestart: after a kill -9 (no final step) the
// new run's series show the stored minutes (from their rollups) and the
// minutes not rolled up yet (from the raw probes), as the old run showed
// them; before, they started empty.
func TestDashboardSeriesAfterRestart(t *testing.T) {
	c, fs := testCore(t, time.Second)
	w, err := newWatcher(c.plan, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.restart(ctx, t0); err != nil {
		t.Fatal(err)
	}
	// 10 probes/s for 198 s: 19 ms, 430 ms in minute 1, minute 2 with 30 lost.
	seq := uint32(0)
	for sec := int64(1); sec <= 200; sec++ {
		for ; int64(seq) < sec*10-20 && seq < 2000; seq++ {
			rtt := int64(19e6)
			if seq >= 600 && seq < 1200 {
				rtt = 430e6
			}
			if seq >= 1300 && seq < 1330 {
				rtt = -1
			}
			c.ring.Push(sample(seq, rtt))
		}
		c.step(ctx, t0+sec*1e9, false)
		w.pass(c, t0+sec*1e9)
	}
	before := w.series.view()
	if n := len(rollups(t, fs)); n < 2 {
		t.Fatalf("%d rollups stored before the kill", n)
	}
	c2 := newCore(c.plan, fs, c.mid, probe.NewRing(0), log.New(io.Discard, "", 0))
	w2, err := newWatcher(c.plan, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	restartAt := t0 + 230e9
	if err := c2.restart(ctx, restartAt); err != nil {
		t.Fatal(err)
	}
	w2.restore(ctx, c2, restartAt)
	after := w2.series.view()
	pts := after.Streams[0].Points
	if len(pts) != 4 {
		t.Fatalf("%d points after the restart, want 4 (minutes 0-3): %+v", len(pts), pts)
	}
	for i, want := range []struct {
		sent, lost uint32
		p50        float64
	}{{600, 0, 19}, {600, 0, 430}, {600, 30, 19}, {180, 0, 19}} {
		p := pts[i]
		if p.StartNs != t0+int64(i)*60e9 || p.Sent != want.sent || p.Lost != want.lost || p.P50Ms < want.p50*0.98 || p.P50Ms > want.p50*1.02 {
			t.Errorf("minute %d: %+v, want sent %d lost %d p50 %g ms", i, p, want.sent, want.lost, want.p50)
		}
	}
	// The minutes the old run had closed read back the same counts, and
	// R(L) over the last 10 minutes agrees.
	for i, p := range before.Streams[0].Points {
		if p.Partial {
			continue
		}
		if q := pts[i]; q.StartNs != p.StartNs || q.Sent != p.Sent || q.Lost != p.Lost {
			t.Errorf("minute %d before %+v after %+v", i, p, q)
		}
	}
	r := after.Streams[0].R10
	for j, th := range after.ThresholdsMs {
		// 1980 probes sent (the newest 2 s never drained): 600 at
		// 430 ms, 30 lost, the rest at 19 ms.
		want := uint64(1350)
		if th < 19 {
			want = 0
		} else if th >= 430 {
			want = 1950
		}
		if r[j].Sent != 1980 || r[j].OK != want {
			t.Errorf("R(%g ms): %d of %d, want %d of 1980", th, r[j].OK, r[j].Sent, want)
		}
	}
}
