// Package browser tests sonde's web page end to end: a real sonde server
// on loopback and the page driven in headless Chromium (Debian chromium
// with playwright-core from web/node_modules).
package browser

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

const chromium = "/usr/bin/chromium"

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// prerequisites skips the test, with the reason, when the browser or the
// node modules are missing (`make web-deps` installs them).
func prerequisites(t *testing.T) (node, playwright string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser end-to-end test skipped in -short mode")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no %s (apt-get install chromium, or make web-deps): %v", chromium, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH")
	}
	playwright = filepath.Join(repoRoot(t), "web", "node_modules", "playwright-core", "index.mjs")
	if _, err := os.Stat(playwright); err != nil {
		t.Skipf("playwright-core not installed (cd web && npm ci): %v", err)
	}
	return node, playwright
}

func serve(t *testing.T) string {
	t.Helper()
	return "http://" + servertest.Start(t, server.Config{Software: "sonde/browser-test", PerIPPerMinute: -1, UDPAddr: "off"})
}

type pageRun struct {
	Status  string       `json:"status"`
	Summary string       `json:"summary"`
	Result  model.Result `json:"result"`
	Logs    []string     `json:"logs"`
}

// TestPageFullRun runs the whole test from the page and checks that every
// figure is present and plausible for loopback.
func TestPageFullRun(t *testing.T) {
	node, playwright := prerequisites(t)
	base := serve(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.json")
	shot := os.Getenv("SONDE_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(dir, "page.png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run.mjs", base+"/?duration=4", shot, out, filepath.Join(dir, "profile"))
	cmd.Env = append(os.Environ(), "PLAYWRIGHT_CORE="+playwright)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("page run: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var run pageRun
	if err := json.Unmarshal(raw, &run); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 1000 {
		t.Errorf("screenshot %s missing or empty: %v", shot, err)
	}
	res := run.Result
	t.Logf("status %q; summary: %s", run.Status, run.Summary)
	if len(res.Errors) > 0 || !strings.HasPrefix(run.Status, "Done") {
		t.Errorf("errors: %q (status %q, logs %q)", res.Errors, run.Status, run.Logs)
	}
	if res.Schema != model.SchemaVersion || res.ID == "" {
		t.Errorf("schema %q id %q", res.Schema, res.ID)
	}
	b := res.Baseline
	if b == nil || b.RTTMs.N < 15 || b.RTTMs.Min <= 0 || b.RTTMs.Min > 20 {
		t.Fatalf("baseline implausible for loopback: %+v", b)
	}
	if b.ServerMinRTTMs <= 0 {
		t.Errorf("baseline lacks the server's TCP_INFO min_rtt: %+v", b)
	}
	t.Logf("baseline RTT min %.3f ms p50 %.3f ms (server min_rtt %.3f ms)", b.RTTMs.Min, b.RTTMs.P50, b.ServerMinRTTMs)
	for _, d := range []*model.DirectionResult{res.Download, res.Upload} {
		if d == nil {
			t.Fatal("missing direction")
		}
		r := d.RFC6349
		t.Logf("%s: %.0f Mbit/s over %d streams (%s), loaded RTT p50 %.2f ms, RFC 6349 goodput %.0f Mbit/s efficiency %.2f%% bottleneck %q",
			d.Direction, d.GoodputBps/1e6, d.Streams, d.StreamsMode, d.Latency.RTTMs.P50, r.GoodputBps/1e6, r.EfficiencyPct, r.Bottleneck)
		switch {
		case d.GoodputBps < 50e6 || d.GoodputBps > 200e9:
			t.Errorf("%s goodput %.0f bit/s implausible on loopback", d.Direction, d.GoodputBps)
		case d.Streams < 2 || len(d.Flows) != d.Streams:
			t.Errorf("%s: %d streams, %d flows", d.Direction, d.Streams, len(d.Flows))
		case d.Latency == nil || d.Latency.RTTMs.N < 20:
			t.Errorf("%s: no latency under load", d.Direction)
		case len(d.Throughput) < 10:
			t.Errorf("%s: throughput series of %d points", d.Direction, len(d.Throughput))
		case r == nil || r.DurationS <= 0 || r.GoodputBps <= 0:
			t.Errorf("%s: RFC 6349 report missing: %+v", d.Direction, r)
		}
		// The page's goodput (receiver counts) and the server's TCP_INFO
		// byte counters must agree for download within 10 %.
		if d.Direction == "download" {
			var acked uint64
			for _, f := range d.Flows {
				// A stream added late by auto streams lives briefly; its
				// series must still cover its life: the page asks for a
				// sample every 20 ms, and at least one per 100 ms must be
				// there.
				if want := max(2, int((f.EndS-f.StartS)/0.1)); len(f.TCPInfo) < want {
					t.Errorf("download flow %d: %d TCP_INFO samples over %.2f s, want ≥ %d", f.ID, len(f.TCPInfo), f.EndS-f.StartS, want)
					continue
				}
				acked += f.TCPInfo[len(f.TCPInfo)-1].BytesAcked
			}
			if float64(acked) < 0.9*float64(d.Bytes) {
				t.Errorf("download: page counted %d bytes, server's TCP acked only %d", d.Bytes, acked)
			}
			if r.EfficiencyPct < 90 || r.MSS == 0 || r.PathMTU == 0 {
				t.Errorf("download RFC 6349 figures: efficiency %.2f%% mss %d pmtu %d", r.EfficiencyPct, r.MSS, r.PathMTU)
			}
		}
	}
}
