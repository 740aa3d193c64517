//go:build !monitoronly

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

func TestMBMPlan(t *testing.T) {
	out, stderr, code := run(t, "mbm", "--plan", "--rate", "10M", "--rtt", "50ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"window W      44 packets", "run length R  5808 packets", "at least 5698 packets", "at least 3 packets", "truncation    60512 packets"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	js, _, code := run(t, "mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--json", "-")
	var r model.MBMResult
	if code != 0 || json.Unmarshal([]byte(js), &r) != nil {
		t.Fatalf("--json -: exit %d, %q", code, js)
	}
	if r.Schema != model.MBMSchemaVersion || !r.Plan || r.Model.WindowPackets != 44 || r.Model.RunLengthPackets != 5808 || r.SPRT.CheapestPass != 5698 || len(r.Model.Models) != len(mbm.Models) {
		t.Errorf("plan JSON: %+v", r)
	}
}

func TestMBMBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"mbm"},
		{"mbm", "--plan"},
		{"mbm", "--plan", "--rate", "10M"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "1ms"}, // R = 3
		{"mbm", "--plan", "--rate", "10MB", "--rtt", "50ms"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--alpha", "0"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--mtu", "40"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--model", "vegas"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--trunc-factor", "0"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--floor", "-1"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--budget", "0.5"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--json", dir},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "-q"},
		{"mbm", "SERVER", "--rate", "10M"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--mode", "tcp", "--tests", "8.3.1"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--mode", "quic"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--tests", "8.9"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--tests", "8.5.1", "--derate", "1.5"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--burst", "0"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--min-rate", "2"},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "50ms", "--json", dir},
		{"mbm", "SERVER", "--rate", "10M", "--rtt", "1ms"},
		{"mbm", "--plan", "SERVER", "--rate", "10M", "--rtt", "50ms"},
		{"mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--csv", "-"},
		{"mbm", "compose", filepath.Join(dir, "missing.json")},
	} {
		_, stderr, code := run(t, args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("sonde %s: exit %d, %q: want 2 and one line", strings.Join(args, " "), code, stderr)
		}
	}
}

// subpathResult builds a saved subpath result as a run would: the plan
// for the target with the subpath's budget, and one test's counts.
func subpathResult(t *testing.T, dir, name string, budget float64, verdict model.MBMVerdict, n, m int64) string {
	t.Helper()
	p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: 10e6, RTT: 50e6, MTU: 1500, HeaderOverhead: 52}, Alpha: 0.05, Beta: 0.05, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	r := mbm.Result(p)
	r.Subpath = name
	lo, hi := mbm.Wilson(m, n)
	r.Tests = []model.MBMTest{{ID: "8.1.1", Name: "paced full data rate", Transport: "udp", Verdict: verdict, Packets: n, Marks: m, Losses: m, Loss: float64(m) / float64(n), LossLow: lo, LossHigh: hi}}
	path := filepath.Join(dir, name+".json")
	b, _ := json.Marshal(r)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMBMCompose(t *testing.T) {
	dir := t.TempDir()
	b, _ := mbm.EqualBudgets(1.0/5808, 2)
	a := subpathResult(t, dir, "a", b[0], "PASS", 12000, 0)
	c := subpathResult(t, dir, "c", b[1], "PASS", 13000, 1)
	out, stderr, code := run(t, "mbm", "compose", a, c, "--json", "-")
	var comp model.MBMComposition
	if code != 0 || json.Unmarshal([]byte(out), &comp) != nil {
		t.Fatalf("exit %d: %s %s", code, stderr, out)
	}
	if len(comp.Tests) != 1 || comp.Tests[0].Verdict != "PASS" || !comp.Tests[0].BudgetsFit {
		t.Errorf("two PASSes within budgets: %+v", comp)
	}
	// 1 − (1 − 0)(1 − 1/13000)
	if got := comp.Tests[0].Loss; got < 7.69e-5 || got > 7.70e-5 {
		t.Errorf("composed loss %g, want 1/13000", got)
	}
	f := subpathResult(t, dir, "f", b[1], "FAIL", 300, 6)
	out, _, code = run(t, "mbm", "compose", a, f)
	if code != exitVerdict || !strings.Contains(out, "FAIL") {
		t.Errorf("a FAILed subpath: exit %d, %s", code, out)
	}
	// Whole-path budgets on both subpaths do not fit: INCONCLUSIVE.
	w1 := subpathResult(t, dir, "w1", 0, "PASS", 6000, 0)
	w2 := subpathResult(t, dir, "w2", 0, "PASS", 6000, 0)
	out, _, code = run(t, "mbm", "compose", w1, w2)
	if code != 0 || !strings.Contains(out, "INCONCLUSIVE") || !strings.Contains(out, "do not fit") {
		t.Errorf("budgets that do not fit: exit %d, %s", code, out)
	}
	// A plan is not a result; another target does not compose.
	plan := filepath.Join(dir, "plan.json")
	if _, stderr, code := run(t, "mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--json", plan); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := run(t, "mbm", "compose", a, plan); code != exitUsage || !strings.Contains(stderr, "a plan") {
		t.Errorf("a plan composed: exit %d %s", code, stderr)
	}
	other := otherTargetResult(t, dir)
	if _, stderr, code := run(t, "mbm", "compose", a, other); code != exitUsage || !strings.Contains(stderr, "differs") {
		t.Errorf("another target composed: exit %d %s", code, stderr)
	}
}

// FuzzMBMCompose: any saved file is refused in one line or composed,
// never a panic.
func FuzzMBMCompose(f *testing.F) {
	dir := f.TempDir()
	f.Add([]byte(`{"schema":"sonde.mbm/v1","target":{"rate_bps":1e7},"model":{"p0":1e-4,"path_p0":1e-4},"tests":[{"id":"8.1.1","verdict":"PASS","packets":10,"marks":0}]}`))
	f.Add([]byte(`{"schema":"sonde.mbm/v1","model":{"p0":-1},"tests":[{"id":"x","verdict":"FAIL","packets":-5,"marks":9}]}`))
	f.Add([]byte(`{"schema":"sonde.mbm/v1","plan":true}`))
	f.Add([]byte(`nonsense`))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "r.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := report.LoadMBMResult(path)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		c, err := mbm.ComposeResults([]string{path, path}, []model.MBMResult{r, r})
		if err == nil && len(c.Tests) != len(r.Tests) {
			t.Fatalf("%d tests composed from %d", len(c.Tests), len(r.Tests))
		}
	})
}

// TestMBMRun runs 8.1.1 against an in-process server on loopback, where
// nothing is lost: PASS, a sonde.mbm/v1 result with the test filled, and
// sonde report re-renders the saved file as text and HTML.
func TestMBMRun(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	dir := t.TempDir()
	js, csv := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.csv")
	var out, stderr string
	var code int
	for try := 0; ; try++ {
		out, stderr, code = run(t, "mbm", addr, "--rate", "4M", "--rtt", "10ms", "--tests", "8.1.1,8.5.1", "--derate", "0.5", "--subpath", "loop", "--json", js, "--csv", csv)
		// The runner's own conformance check: this host did not send the
		// pattern (ERROR or INCONCLUSIVE, never a path verdict).
		busy := strings.Contains(out+stderr, "the sender could not") || strings.Contains(out+stderr, "pattern not produced")
		if !busy {
			break
		}
		if try == 1 {
			t.Skipf("the host was too busy to send the pattern twice: %s", stderr)
		}
	}
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if !strings.Contains(out, "8.1.1") || !strings.Contains(out, "PASS") {
		t.Errorf("text: %s", out)
	}
	r, err := report.LoadMBMResult(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tests) != 2 || r.Subpath != "loop" || r.Start.IsZero() || r.Model.WindowPackets != 4 {
		t.Fatalf("result: %+v", r)
	}
	for _, x := range r.Tests {
		if x.Verdict != "PASS" || x.Transport != "udp" || x.Packets == 0 || x.UDP.DecisionPackets != x.Packets || x.UDP.Deadlines == 0 {
			t.Errorf("test %s: %+v", x.ID, x)
		}
	}
	if r.Tests[1].UDP == nil || r.Tests[1].UDP.Derate != 0.5 || r.Tests[1].UDP.BurstPackets != 2 {
		t.Errorf("8.5.1 at derate 0.5, W 4: %+v", r.Tests[1].UDP)
	}
	if b, _ := os.ReadFile(csv); strings.Count(string(b), "\n") != 3 {
		t.Errorf("csv: %q", b)
	}
	text, stderr, code := run(t, "report", js)
	if code != 0 || !strings.Contains(text, "8.5.1 sustained full-rate bursts (udp): PASS") {
		t.Errorf("sonde report: exit %d %s\n%s", code, stderr, text)
	}
	html, _, code := run(t, "report", js, "--html", "-")
	if code != 0 || !strings.Contains(html, "<html") || !strings.Contains(html, "sustained full-rate bursts") {
		t.Errorf("sonde report --html: exit %d", code)
	}
}

// TestMBMNoServerSupport: a server without the MBM sink (here, one that
// answers 404 to everything) is one line, exit 1.
func TestMBMNoServerSupport(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	_, stderr, code := run(t, "mbm", ts.URL, "--rate", "4M", "--rtt", "10ms")
	if code != exitFailure || !strings.Contains(stderr, "server does not support MBM") || strings.Contains(strings.TrimSpace(stderr), "\n") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1, UDPMaxBitrate: 1e6})
	_, stderr, code = run(t, "mbm", addr, "--rate", "4M", "--rtt", "10ms")
	if code != exitRefused || !strings.Contains(stderr, "limit of 1.0 Mbit/s") {
		t.Errorf("rate above the limit: exit %d, %q", code, stderr)
	}
}

// TestMBMRunTCP: --mode tcp runs tcprun's 8.1.1 over the server's upload
// stream and writes its test with the tcp block (the verdict is tcprun's
// own business, tested there).
func TestMBMRunTCP(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	js := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := run(t, "mbm", addr, "--mode", "tcp", "--rate", "4M", "--rtt", "10ms", "--json", js, "-q")
	r, err := report.LoadMBMResult(js)
	if err != nil {
		t.Fatalf("exit %d, %s: %v", code, stderr, err)
	}
	if len(r.Tests) != 1 || r.Tests[0].Transport != "tcp" || r.Tests[0].TCP == nil || r.Tests[0].Verdict == "" || r.Env == nil || r.Env.CongestionControl == "" {
		t.Errorf("exit %d, %s: %+v", code, stderr, r.Tests)
	}
	t.Logf("exit %d: %s %s", code, r.Tests[0].Verdict, r.Tests[0].Reason)
}

// TestMBMRunTCPWindowed: --mode tcp --tests 8.1.2 opens a TCP MBM
// session and writes the window's readback in the tcp block (the verdict
// is tcprun's business; on loopback the window may not land on W).
func TestMBMRunTCPWindowed(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	js := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := run(t, "mbm", addr, "--mode", "tcp", "--tests", "8.1.2", "--rate", "4M", "--rtt", "10ms", "--json", js, "-q")
	r, err := report.LoadMBMResult(js)
	if err != nil {
		t.Fatalf("exit %d, %s: %v", code, stderr, err)
	}
	if len(r.Tests) != 1 || r.Tests[0].ID != "8.1.2" || r.Tests[0].TCP == nil {
		t.Fatalf("exit %d, %s: %+v", code, stderr, r.Tests)
	}
	tc := r.Tests[0].TCP
	if tc.WindowPackets < 1 || tc.ReceiveWindowBytes != int(tc.WindowPackets)*1448 || tc.ReceiveBufferBytes < 2*tc.ReceiveBufferSetBytes || tc.WindowAttempts < 1 {
		t.Errorf("window block: %+v", *tc)
	}
	t.Logf("exit %d: %s %s; W %d, snd_wnd %d, in flight %d, server rcv_wnd %d, attempts %d", code, r.Tests[0].Verdict, r.Tests[0].Reason,
		tc.WindowPackets, tc.MaxSndWndBytes, tc.MaxInFlight, tc.ServerMaxRcvWndBytes, tc.WindowAttempts)
}

// TestMBMRunAuto: --mode auto runs the tests TCP can produce over TCP and
// the others over UDP, reports them in the order asked for, each with its
// transport, and records the congestion control of the TCP part.
func TestMBMRunAuto(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	js := filepath.Join(t.TempDir(), "r.json")
	_, stderr, code := run(t, "mbm", addr, "--mode", "auto", "--tests", "8.1.3,8.1.1", "--rate", "4M", "--rtt", "10ms", "--json", js, "-q")
	r, err := report.LoadMBMResult(js)
	if err != nil {
		t.Fatalf("exit %d, %s: %v", code, stderr, err)
	}
	if len(r.Tests) != 2 || r.Tests[0].ID != "8.1.3" || r.Tests[0].Transport != "udp" || r.Tests[0].UDP == nil ||
		r.Tests[1].ID != "8.1.1" || r.Tests[1].Transport != "tcp" || r.Tests[1].TCP == nil {
		t.Fatalf("exit %d, %s: %+v", code, stderr, r.Tests)
	}
	if r.Env == nil || r.Env.CongestionControl == "" || r.Env.Kernel == "" {
		t.Errorf("environment %+v", r.Env)
	}
	if _, stderr, code := run(t, "mbm", addr, "--mode", "auto", "--tests", "9.9", "--rate", "4M", "--rtt", "10ms"); code != exitUsage || !strings.Contains(stderr, "auto mode") {
		t.Errorf("unknown test: exit %d, %q", code, stderr)
	}
}

// otherTargetResult writes, in dir, a result of one PASSed test for
// another target (20 Mbit/s at 50 ms) than the compose tests' own.
func otherTargetResult(t *testing.T, dir string) string {
	t.Helper()
	other := filepath.Join(dir, "other.json")
	if _, stderr, code := run(t, "mbm", "--plan", "--rate", "20M", "--rtt", "50ms", "--json", other); code != 0 {
		t.Fatal(stderr)
	}
	var r model.MBMResult
	raw, err := os.ReadFile(other)
	if err == nil {
		err = json.Unmarshal(raw, &r)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Plan, r.Tests = false, []model.MBMTest{{ID: "8.1.1", Verdict: "PASS", Packets: 10}}
	if raw, err = json.Marshal(r); err == nil {
		err = os.WriteFile(other, raw, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return other
}
