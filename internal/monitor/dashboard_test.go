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
	for _, p := range []string{"/monitor.js", "/monitor.css", "/uplot.css"} {
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
	if len(av.Recent) != 2 || av.Recent[0].Status != AlertFiring || av.Recent[0].StartsNs != t0+150e9 ||
		av.Recent[1].Status != AlertResolved || av.Recent[1].EndsNs != t0+170e9 || len(av.Firing) != 0 || len(av.Rules) != 1 {
		t.Fatalf("alerts %s", body)
	}
	if n := strings.Count(logs.String(), "alert link-outage [critical]"); n != 2 {
		t.Errorf("%d log lines for the alert:\n%s", n, logs.String())
	}
}
