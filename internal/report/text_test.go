package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

func renderText(t *testing.T, r *model.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	return b.String()
}

// checkText applies the rules every text summary must keep.
func checkText(t *testing.T, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > textWidth {
			t.Errorf("line %d is %d columns: %q", i+1, n, line)
		}
	}
	if m := nonFinite.FindString(out); m != "" {
		t.Errorf("summary contains %q:\n%s", m, out)
	}
}

// lineWith returns the first line containing all parts, or "".
func lineWith(out string, parts ...string) string {
	for _, line := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return line
		}
	}
	return ""
}

func TestWriteTextFull(t *testing.T) {
	r := fullResult()
	out := renderText(t, r)
	checkText(t, out)
	idle := r.Baseline.RTTMs.P50
	upAdded := r.Upload.Latency.RTTMs.P50 - idle
	checks := [][]string{
		{"server", "198.18.0.2:8080", "sonde 0.1"},
		{"started", "2025-03-14T09:26:53Z", "took 25.0 s"},
		{"config", "streams auto", "10.0 s per direction"},
		{"lab path", `profile "cable"`},
		{"RTT", "min " + msNumber(r.Baseline.RTTMs.Min), "median " + msNumber(idle), "p90 "},
		{"n=100", "configured 20.0 ms"},
		{"TCP_INFO", "min_rtt client " + FormatMs(r.Baseline.ClientMinRTTMs)},
		{"goodput", units.FormatRate(r.Download.GoodputBps), "over 10.0 s"},
		{"configured 100.0 Mbit/s"},
		{"steady state", units.FormatRate(r.Download.RFC6349.GoodputBps), "over 3.0-11.0 s"},
		{"streams", "4 (auto)"},
		{"streams", "1 (fixed)"},
		{"RTT loaded", "median " + msNumber(r.Upload.Latency.RTTMs.P50), "p99 " + msNumber(r.Upload.Latency.RTTMs.P99)},
		{"under load", FormatDeltaMs(upAdded), "lab queue 1.0 MiB drains in 419.4 ms"},
		{"RPM", formatRPM(r.Download.RPM.RPM), "(idle 3000)"},
		{"verdict", "upload adds " + FormatMs(upAdded) + " of queueing delay: bufferbloat"},
		{"verdict", "download adds", "queueing delay: low"},
		{"RFC 6349, steady state 3.0-11.0 s"},
		{"MSS / MTU", "1448 B / 1500 B", "configured MTU 1500 B"},
		{"TTR", "1.04", "ideal"},
		{"TTR", "needs --link-rate"},
		{"BDP", "244.1 KiB (2.0 Mbit)"},
		{"efficiency", "99.80 %"},
		{"configured loss 0.10 %"},
		{"max windows", "snd_wnd 3.0 MiB"},
		{"window limit", units.FormatRate(r.Download.RFC6349.MaxAchievableBps)},
		{"bottleneck", "network", "flows: network 3, receiver window 1"},
		{"flow", "goodput", "warm-up", "limit"},
		{"4", units.FormatRate(r.Download.Flows[3].GoodputBps), "receiver window"},
		{"QoS classes (5.0 s)"},
		{"EF", "upload", "46", "2.1 Mbit/s", "21.2 ms", "ok"},
		{"AF41", "34", "380.0 ms", "changed"},
		{"BE", "unknown"},
		{"- upload queue is 22x the BDP"},
	}
	for _, parts := range checks {
		if lineWith(out, parts...) == "" {
			t.Errorf("no line with %q in:\n%s", parts, out)
		}
	}
	// Sections come in reading order.
	last := -1
	for _, s := range []string{"sonde test", "Baseline (idle)", "\nDownload\n", "\nUpload\n", "QoS classes", "Notes"} {
		i := strings.Index(out, s)
		if i <= last {
			t.Errorf("section %q out of order or missing", s)
		}
		last = i
	}
	if strings.Contains(out, "Errors") {
		t.Errorf("Errors section without errors")
	}
}

func TestWriteTextLoopback(t *testing.T) {
	r := fullResult()
	r.Truth = nil
	r.Config.Embedded = true
	out := renderText(t, r)
	checkText(t, out)
	if lineWith(out, "note", "embedded server") == "" {
		t.Errorf("no embedded note:\n%s", out)
	}
	if strings.Contains(out, "configured") {
		t.Errorf("ground truth shown without a lab:\n%s", out)
	}
	r.Config.Embedded = false
	r.Server.Address = "[::1]:4443"
	if out := renderText(t, r); lineWith(out, "note", "loopback") == "" {
		t.Errorf("no loopback note for ::1:\n%s", out)
	}
	for addr, want := range map[string]bool{"127.0.0.1:80": true, "localhost": true, "https://localhost:8443/x": true,
		"198.18.0.2:80": false, "": false, "example.net": false} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v", addr, got)
		}
	}
}

// partialResults are runs that stopped early or lack parts.
func partialResults() map[string]*model.Result {
	rs := map[string]*model.Result{}
	rs["empty"] = &model.Result{}
	rs["errors only"] = &model.Result{Config: model.TestConfig{Server: "198.18.0.2:8080"},
		Errors: []string{"connect: connection refused", "  "}}

	r := fullResult()
	r.Baseline = nil
	r.Upload = nil
	rs["no baseline, download only"] = r

	r = fullResult()
	r.Download = nil
	r.Upload.Latency = nil
	r.Upload.RPM = nil
	r.Upload.RFC6349 = nil
	r.Upload.Flows = nil
	r.Upload.Throughput = nil
	r.Errors = []string{"upload: server closed the connection after 3.2 s"}
	rs["upload bare"] = r

	r = fullResult()
	r.Upload = &model.DirectionResult{Direction: "upload"}
	r.Download.Latency = &model.RTTResult{}
	r.Download.RPM = &model.RPM{}
	r.Download.RFC6349 = &model.RFC6349{}
	r.Download.Flows = []model.Flow{{ID: 1}, {ID: 2, TCPInfo: []model.TCPSample{{TS: 1}}}}
	r.Baseline = &model.RTTResult{}
	r.Classes = &model.ClassesResult{Flows: []model.ClassFlow{{}}}
	r.Truth = &model.GroundTruth{}
	rs["zero values"] = r

	r = fullResult()
	nan, inf := math.NaN(), math.Inf(1)
	r.Baseline.RTTMs.P50 = nan
	r.Download.GoodputBps = nan
	r.Download.RPM.RPM = inf
	r.Download.RFC6349.TTR = nan
	r.Download.RFC6349.BufferDelayPct = inf
	r.Download.Flows[0].WarmupS = nan
	r.Download.Flows[0].Throughput[3].Bps = nan
	r.Download.Latency.Samples[2].RTTMs = inf
	r.Upload.Latency.RTTMs.P99 = -inf
	r.Truth.DownRateBps = inf
	r.Upload.Direction = ""
	rs["non-finite"] = r
	return rs
}

func TestPartialResults(t *testing.T) {
	for name, r := range partialResults() {
		t.Run(name, func(t *testing.T) {
			out := renderText(t, r)
			checkText(t, out)
			if !strings.HasPrefix(out, "sonde test\n") {
				t.Errorf("no header:\n%s", out)
			}
			for _, e := range r.Errors {
				if e = strings.TrimSpace(e); e != "" && !strings.Contains(out, e) {
					t.Errorf("error %q not shown", e)
				}
			}
			doc := renderHTML(t, r)
			checkWellFormed(t, doc)
			checkSelfContained(t, doc)
			if m := nonFinite.FindString(doc); m != "" {
				t.Errorf("html contains %q", m)
			}
		})
	}
	t.Run("nil", func(t *testing.T) {
		if out := renderText(t, nil); !strings.Contains(out, "no result") {
			t.Errorf("nil result: %q", out)
		}
		checkWellFormed(t, renderHTML(t, nil))
	})
}

func TestPartialKeepsMeasured(t *testing.T) {
	r := partialResults()["upload bare"]
	out := renderText(t, r)
	if lineWith(out, "goodput", units.FormatRate(r.Upload.GoodputBps)) == "" {
		t.Errorf("measured upload goodput missing:\n%s", out)
	}
	if lineWith(out, "RTT", "median "+msNumber(r.Baseline.RTTMs.P50)) == "" {
		t.Errorf("baseline missing:\n%s", out)
	}
	if strings.Contains(out, "Download") || strings.Contains(out, "verdict") {
		t.Errorf("unmeasured parts shown:\n%s", out)
	}
	if !strings.Contains(out, "\nErrors\n  - upload: server closed") {
		t.Errorf("errors section missing:\n%s", out)
	}
}
