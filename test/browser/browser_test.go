// Package browser tests sonde's web page end to end: a real sonde server
// on loopback and the page driven in headless Chromium (Debian chromium
// with playwright-core from web/node_modules).
package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
// node modules are missing (`make node-deps` installs them).
func prerequisites(t *testing.T) (node, playwright string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser end-to-end test skipped in -short mode")
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no %s (apt-get install chromium, or make node-deps): %v", chromium, err)
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

// pageRun is what run.mjs saw on the page.
type pageRun struct {
	Status     string            `json:"status"`
	Summary    string            `json:"summary"`
	Errors     string            `json:"errors"`
	Partial    string            `json:"partial"`
	Figures    map[string]string `json:"figures"`
	PastRows   int               `json:"past_rows"`
	Charts     int               `json:"charts"`
	Saved      json.RawMessage   `json:"saved"`
	ReopenedID string            `json:"reopened_id"`
	Overflow   *int              `json:"phone_overflow"`
	Result     model.Result      `json:"result"`
}

// runPage opens base+query in Chromium (or the browser env names), clicks
// Start and returns what the page showed. onMark, if set, runs when the
// page's status starts with mark. A failed run fails the test.
func runPage(t *testing.T, base, query, shot string, env []string, mark string, onMark func()) pageRun {
	t.Helper()
	run, err := pageAttempt(t, base, query, shot, env, mark, onMark)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// runPageRetryCrash is runPage with one more run if the browser crashed
// (run.mjs exits 3: Firefox's main process ended unasked). Any other
// failure, or a second crash, fails the test.
func runPageRetryCrash(t *testing.T, base, query, shot string, env []string) pageRun {
	t.Helper()
	run, err := pageAttempt(t, base, query, shot, env, "", nil)
	var crash *browserCrash
	if errors.As(err, &crash) {
		t.Logf("FIREFOX CRASHED; running the page once more. %v", err)
		run, err = pageAttempt(t, base, query, shot, env, "", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// crashExit is run.mjs's exit status when the browser crashed.
const crashExit = 3

// browserCrash is a page run that ended because the browser crashed.
type browserCrash struct{ err error }

func (c *browserCrash) Error() string { return c.err.Error() }
func (c *browserCrash) Unwrap() error { return c.err }

// pageRunLimit bounds one page run. run.mjs gives up 10 s earlier
// (SONDE_RUN_TIMEOUT_S) and says where it was stuck; if even that fails,
// node gets SIGTERM (it closes the browser, which runs in its own process
// group and would outlive a SIGKILL of node) and, 15 s later, SIGKILL.
const pageRunLimit = 180 * time.Second

func pageAttempt(t *testing.T, base, query, shot string, env []string, mark string, onMark func()) (pageRun, error) {
	t.Helper()
	node, _ := prerequisites(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "run.json")
	if shot == "" {
		shot = filepath.Join(dir, "page.png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), pageRunLimit)
	defer cancel()
	// run.mjs drives Chromium over a bare DevTools socket (cdp.mjs says
	// why not playwright for a measuring run).
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "--experimental-websocket", "run.mjs", base+query, shot, out)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, fmt.Sprintf("SONDE_RUN_TIMEOUT_S=%d", int((pageRunLimit-10*time.Second)/time.Second)))
	if mark != "" {
		cmd.Env = append(cmd.Env, "SONDE_MARK="+mark)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return pageRun{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return pageRun{}, err
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "MARK" && onMark != nil {
			onMark()
		}
	}
	if err := cmd.Wait(); err != nil {
		err = fmt.Errorf("page run (%.0f s): %w\n%s", time.Since(start).Seconds(), err, stderr.String())
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == crashExit {
			return pageRun{}, &browserCrash{err}
		}
		return pageRun{}, err
	}
	t.Logf("page run took %.1f s", time.Since(start).Seconds())
	raw, err := os.ReadFile(out)
	if err != nil {
		return pageRun{}, err
	}
	var run pageRun
	if err := json.Unmarshal(raw, &run); err != nil {
		return pageRun{}, fmt.Errorf("%s: %w", out, err)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 1000 {
		t.Errorf("screenshot %s missing or empty: %v", shot, err)
	}
	t.Logf("status %q; summary: %s; errors: %s", run.Status, run.Summary, run.Errors)
	return run, nil
}

// TestPageFullRun runs the whole test from the page and checks that every
// figure is present and plausible for loopback, that the charts, Save JSON
// and the list of past results work, and that the report fits a phone.
func TestPageFullRun(t *testing.T) {
	prerequisites(t)
	base := serve(t)
	phone := os.Getenv("SONDE_PHONE_SCREENSHOT")
	if phone == "" {
		phone = filepath.Join(t.TempDir(), "phone.png")
	}
	run := runPage(t, base, "/?duration=4&rtc_duration=1", os.Getenv("SONDE_SCREENSHOT"), []string{"SONDE_PHONE_SHOT=" + phone}, "", nil)
	if st, err := os.Stat(phone); err != nil || st.Size() < 1000 {
		t.Errorf("phone screenshot %s missing or empty: %v", phone, err)
	}
	if run.Overflow == nil || *run.Overflow > 0 {
		t.Errorf("at 390 px wide the page scrolls sideways by %v px", run.Overflow)
	}
	if run.Charts != 2 {
		t.Errorf("%d live charts, want 2 (throughput, RTT)", run.Charts)
	}
	var saved model.Result
	if err := json.Unmarshal(run.Saved, &saved); err != nil || saved.ID != run.Result.ID || saved.Download == nil {
		t.Errorf("Save JSON gave %.200s (%v)", run.Saved, err)
	}
	if run.PastRows < 1 || run.ReopenedID != run.Result.ID {
		t.Errorf("past results: %d rows, reopened %q, want this run %q", run.PastRows, run.ReopenedID, run.Result.ID)
	}
	for _, k := range []string{"download.goodput_bps", "download.rfc_goodput", "download.efficiency", "download.mtu", "download.max_achievable",
		"download.loaded_p50", "download.rpm", "upload.goodput_bps", "upload.rfc_goodput", "upload.loaded_p50", "upload.rpm", "baseline_min"} {
		if v, ok := run.Figures[k]; !ok || v == "" || strings.HasPrefix(v, "–") || strings.HasPrefix(v, "NaN") {
			t.Errorf("figure %s shown as %q", k, v)
		}
	}
	if !strings.Contains(run.Summary, "Download:") || !strings.Contains(run.Summary, "Upload:") || !strings.Contains(run.Summary, "queueing delay") {
		t.Errorf("plain-language summary incomplete: %q", run.Summary)
	}
	res := run.Result
	if len(res.Errors) > 0 || !strings.HasPrefix(run.Status, "Done") {
		t.Errorf("errors: %q (status %q)", res.Errors, run.Status)
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
		// Responsiveness: foreign probes (new connections, timed by the
		// browser's Resource Timing) every 250 ms over the 4 s phase, and
		// self probes on the loaded streams.
		if p := d.RPM; p == nil {
			t.Errorf("%s: no RPM", d.Direction)
		} else {
			t.Logf("%s: RPM %.0f (idle %.0f), foreign TCP p50 %.3f ms (n %d), HTTP p50 %.3f ms, self p50 %.3f ms (n %d)",
				d.Direction, p.RPM, p.IdleRPM, p.TCPMs.P50, p.TCPMs.N, p.HTTPMs.P50, p.SelfMs.P50, p.SelfMs.N)
			if p.TCPMs.N < 8 || p.HTTPMs.N != p.TCPMs.N || p.SelfMs.N < 10 || p.RPM <= 0 || p.IdleRPM <= 0 ||
				p.TCPMs.Min <= 0 || p.TCPMs.P50 > 100 || p.HTTPMs.Min <= 0 || p.HTTPMs.P50 > 1000 {
				t.Errorf("%s: RPM implausible on loopback: %+v", d.Direction, p)
			}
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

// TestPageWorkerCrash makes the first upload worker throw (test hook
// ?crash=upload): the page must name the failed phase and stream, and keep
// the baseline, the download and what the other upload streams measured.
func TestPageWorkerCrash(t *testing.T) {
	prerequisites(t)
	run := runPage(t, serve(t), "/?duration=4&rtc_duration=1&crash=upload", "", nil, "", nil)
	res := run.Result
	if !strings.HasPrefix(run.Status, "Finished with problems") {
		t.Errorf("status %q, want it to say the run had problems", run.Status)
	}
	if !strings.Contains(run.Errors, "upload worker u0 crashed") || !strings.Contains(run.Errors, "simulated crash") {
		t.Errorf("errors shown: %q, want the crashed upload worker named", run.Errors)
	}
	if res.Baseline == nil || res.Baseline.RTTMs.N < 15 {
		t.Errorf("baseline lost: %+v", res.Baseline)
	}
	if res.Download == nil || res.Download.GoodputBps < 50e6 || res.Download.RFC6349 == nil {
		t.Errorf("download lost after an upload worker crash: %+v", res.Download)
	}
	if res.Upload == nil || res.Upload.GoodputBps <= 0 {
		t.Errorf("upload figures of the surviving streams lost: %+v", res.Upload)
	}
	if len(run.Saved) == 0 {
		t.Error("Save JSON not offered")
	}
}

// TestPageServerGone stops the server while the page downloads: the page
// must say what failed, keep the baseline and the partial download it
// measured itself, and offer Save JSON of that.
func TestPageServerGone(t *testing.T) {
	prerequisites(t)
	srv, err := server.New(server.Config{Software: "sonde/browser-test", PerIPPerMinute: -1, UDPAddr: "off"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, []net.Listener{ln}, nil)
	}()
	t.Cleanup(func() { stop(); <-done })
	gone := func() {
		stop()
		<-done
		t.Log("server stopped during the download")
	}
	run := runPage(t, "http://"+ln.Addr().String(), "/?duration=6&rtc_duration=1", "", nil, "Measuring download", gone)
	res := run.Result
	if !strings.HasPrefix(run.Status, "Finished with problems") {
		t.Errorf("status %q", run.Status)
	}
	if !strings.Contains(run.Errors, "download") || !strings.Contains(run.Errors, "report from the server failed") {
		t.Errorf("errors shown: %q, want the download and the report named", run.Errors)
	}
	if run.Partial == "" {
		t.Error("no notice that the result is partial")
	}
	if res.Baseline == nil || res.Baseline.RTTMs.N < 15 || res.Baseline.RTTMs.Min <= 0 {
		t.Errorf("baseline lost: %+v", res.Baseline)
	}
	if res.Download == nil || res.Download.GoodputBps <= 0 || res.Download.Streams < 2 {
		t.Errorf("partial download lost: %+v", res.Download)
	}
	if v := run.Figures["download.goodput_bps"]; v == "" || strings.HasPrefix(v, "–") {
		t.Errorf("partial download goodput shown as %q", v)
	}
	var saved map[string]json.RawMessage
	if err := json.Unmarshal(run.Saved, &saved); err != nil || saved["browser_measurements"] == nil || saved["baseline"] == nil {
		t.Errorf("Save JSON of the partial result: %.300s (%v)", run.Saved, err)
	}
}
