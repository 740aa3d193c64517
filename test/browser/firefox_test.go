package browser

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

const firefox = "/usr/bin/firefox-esr"

// firefoxPaceBps caps each server connection's send rate in the Firefox
// test. Firefox queues incoming WebSocket messages without bound: an
// unpaced loopback download (2.4-2.7 Gbit/s here) grew its parent
// process by ~3 GB in 4 s, and draining that made later BiDi calls, the
// upload's handshakes and the whole run wait, on a loaded machine past
// the test's time limit (docs/browser.md, "Firefox"). 300 Mbit/s per
// stream is well above the test's 50 Mbit/s floor and well below what
// Firefox drains on a busy 2-core machine.
const firefoxPaceBps = 300e6

// TestPageFirefox runs the whole test from the page in headless Firefox
// (Debian's firefox-esr over WebDriver BiDi, bidi.mjs) against a server
// that paces its connections (firefoxPaceBps) and checks that every figure
// is there and plausible for loopback. A Firefox crash gets one more page
// run, logged as "FIREFOX CRASHED"; any other failure fails.
func TestPageFirefox(t *testing.T) {
	prerequisites(t)
	if _, err := os.Stat(firefox); err != nil {
		t.Skipf("no %s (make apt-deps installs firefox-esr): %v", firefox, err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the paced server needs Linux (SO_MAX_PACING_RATE)")
	}
	base := "http://" + servertest.Serve(t, server.Config{Software: "sonde/browser-test", PerIPPerMinute: -1, UDPAddr: "off"},
		servertest.Options{PaceBps: firefoxPaceBps})
	run := runPageRetryCrash(t, base, "/?duration=4&rtc_duration=1", os.Getenv("SONDE_FIREFOX_SCREENSHOT"),
		[]string{"SONDE_BROWSER=firefox"})
	res := run.Result
	if !strings.HasPrefix(run.Status, "Done") || len(res.Errors) > 0 {
		t.Errorf("status %q, errors %q", run.Status, res.Errors)
	}
	if b := res.Baseline; b == nil || b.RTTMs.N < 15 || b.RTTMs.Min <= 0 || b.RTTMs.Min > 20 {
		t.Errorf("baseline implausible for loopback: %+v", b)
	}
	for _, d := range []*struct {
		name string
		bps  float64
		n    int
	}{{"download", 0, 0}, {"upload", 0, 0}} {
		dr := res.Download
		if d.name == "upload" {
			dr = res.Upload
		}
		if dr == nil || dr.GoodputBps < 50e6 || dr.Streams < 1 || dr.RFC6349 == nil || dr.Latency == nil || dr.Latency.RTTMs.N < 10 {
			t.Errorf("%s figures missing or implausible: %+v", d.name, dr)
			continue
		}
		t.Logf("firefox %s: %.0f Mbit/s over %d streams, loaded RTT p50 %.1f ms", d.name, dr.GoodputBps/1e6, dr.Streams, dr.Latency.RTTMs.P50)
		// Foreign probes need a new connection each (Firefox, too, keeps
		// credential-less requests out of the page's keep-alive pool).
		// During a download Firefox opens new sockets late (see "Firefox"
		// in docs/browser.md), so there only some probes must come back.
		if p := dr.RPM; p == nil || p.RPM <= 0 || p.TCPMs.N < 1 || (d.name == "upload" && p.TCPMs.N < 4) {
			t.Errorf("%s: no responsiveness from foreign probes: %+v", d.name, p)
		} else {
			t.Logf("firefox %s: RPM %.0f, foreign TCP p50 %.3f ms (n %d)", d.name, p.RPM, p.TCPMs.P50, p.TCPMs.N)
		}
	}
	// On loopback a loaded RTT of hundreds of ms can only be the browser's
	// own queue: the result must say so instead of reporting bufferbloat.
	if d := res.Download; d != nil && d.Latency != nil && d.Latency.RTTMs.P50 > 200 {
		noted := false
		for _, n := range res.Notes {
			noted = noted || strings.HasPrefix(n, "download: the page's RTT under load")
		}
		if !noted || strings.Contains(run.Summary, "Download adds") {
			t.Errorf("download loaded RTT %.0f ms on loopback without the browser-queue note (notes %q, summary %q)", d.Latency.RTTMs.P50, res.Notes, run.Summary)
		}
	}
	if run.Charts != 2 || run.PastRows < 1 || run.ReopenedID != res.ID {
		t.Errorf("charts %d, past rows %d, reopened %q (want %q)", run.Charts, run.PastRows, run.ReopenedID, res.ID)
	}
	for _, k := range []string{"download.goodput_bps", "download.efficiency", "upload.goodput_bps", "baseline_min"} {
		if v := run.Figures[k]; v == "" || strings.HasPrefix(v, "–") {
			t.Errorf("figure %s shown as %q", k, v)
		}
	}
}

// TestFirefoxCrashFailsFast kills Firefox's main process mid-run (test hook
// SONDE_TEST_KILL_BROWSER_S): the pending BiDi calls must fail at once
// with the exit status, and run.mjs must report a crash (exit 3, "FIREFOX
// CRASHED") instead of hanging until the test's limit or exiting 13 with
// nothing said.
func TestFirefoxCrashFailsFast(t *testing.T) {
	prerequisites(t)
	if _, err := os.Stat(firefox); err != nil {
		t.Skipf("no %s (make apt-deps installs firefox-esr): %v", firefox, err)
	}
	start := time.Now()
	_, err := pageAttempt(t, serve(t), "/?duration=4&rtc_duration=1", "", []string{"SONDE_BROWSER=firefox", "SONDE_TEST_KILL_BROWSER_S=3"}, "", nil)
	took := time.Since(start)
	var crash *browserCrash
	if !errors.As(err, &crash) {
		t.Fatalf("a killed Firefox was not reported as a crash: %v", err)
	}
	msg := err.Error()
	t.Logf("after %.1f s: %.400s", took.Seconds(), msg)
	if !strings.Contains(msg, "FIREFOX CRASHED") || !strings.Contains(msg, "signal SIGKILL") || !strings.Contains(msg, "firefox stderr:") {
		t.Errorf("crash report lacks the marker, the exit status or Firefox's stderr: %s", msg)
	}
	// Launch takes seconds, the kill comes 3 s into the run; a hang would
	// last until run.mjs's own limit (170 s).
	if took > 90*time.Second {
		t.Errorf("run.mjs took %.0f s to notice the crash", took.Seconds())
	}
}
