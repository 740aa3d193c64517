package browser

import (
	"os"
	"strings"
	"testing"
)

const firefox = "/usr/bin/firefox-esr"

// TestPageFirefox runs the whole test from the page in headless Firefox
// (Debian's firefox-esr over WebDriver BiDi, bidi.mjs) and checks that
// every figure is there and plausible for loopback. Firefox's loaded RTT
// is not checked against the path: Firefox queues incoming WebSocket
// messages without bound, so on a fast download the page's own probes wait
// in the browser (docs/browser.md, "Firefox").
func TestPageFirefox(t *testing.T) {
	prerequisites(t)
	if _, err := os.Stat(firefox); err != nil {
		t.Skipf("no %s (make apt-deps installs firefox-esr): %v", firefox, err)
	}
	run := runPage(t, serve(t), "/?duration=4&rtc_duration=1", os.Getenv("SONDE_FIREFOX_SCREENSHOT"),
		[]string{"SONDE_BROWSER=firefox"}, "", nil)
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
