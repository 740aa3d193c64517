package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

const mrT0 = int64(1_767_225_600_000_000_000) // 2026-01-01 00:00 UTC

// monitorStore writes a monitor "home" with one stream and one known
// minute: per 100 probes 88 answered in 20 ms, 10 in 300 ms, one lost,
// one late.
func monitorStore(t *testing.T) string {
	t.Helper()
	b := &store.Batch{}
	for i := range 600 {
		p := model.ProbeSample{Seq: uint32(i), SentNs: mrT0 + int64(i)*100e6, RTTNs: 20e6, Load: model.LoadIdle}
		switch {
		case i%100 == 50:
			p.RTTNs, p.Lost = -1, true
		case i%100 == 51:
			p.RTTNs, p.Lost, p.Late = 2500e6, true, true
		case i%10 == 9:
			p.RTTNs = 300e6
		}
		b.Probes = append(b.Probes, p)
	}
	return oneStreamStore(t, b, nil)
}

// oneStreamStore writes a store with monitor "home", one STAMP stream and
// the batch b, then the capacity row if there is one.
func oneStreamStore(t *testing.T, b *store.Batch, capacity *store.CapacityRow) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.db")
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mid, err := st.Monitor(ctx, store.Identity{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Streams(ctx, mid, []model.MonitorStream{{Target: "198.18.0.2:862", Kind: model.ProbeSTAMP, Name: "198.18.0.2:862/stamp"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, mid, b); err != nil {
		t.Fatal(err)
	}
	if capacity != nil {
		if err := st.SetCapacity(ctx, mid, *capacity); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func runMonitorReport(args ...string) (string, string, int) {
	return runCmd(newMonitorReportCmd(), args...)
}

// runCmd runs one command as main does (flag errors are usage errors, one
// line on stderr) and returns its stdout, stderr and exit code.
func runCmd(cmd *cobra.Command, args ...string) (string, string, int) {
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		errb.WriteString(oneLine(err))
	}
	return out.String(), errb.String(), exitCode(err)
}

func TestMonitorReportKnownFigures(t *testing.T) {
	db := monitorStore(t)
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	csvPath := filepath.Join(dir, "r.csv")
	text, stderr, code := runMonitorReport("--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:10:00Z",
		"--threshold", "30ms,200ms,500ms", "--json", js, "--csv", csvPath, "--html", filepath.Join(dir, "r.html"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`sonde monitor report: home`, `probes sent\s+600\n`, `probes lost\s+12\n`, `of them late\s+6\n`,
		`median RTT\s+20\.0 ms`, `source\s+raw \(`, `Stream 198\.18\.0\.2:862/stamp`} {
		if !regexpLine(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// Table 20: R(200 ms) = 528/600 = 88.00 %, R(500 ms) = 588/600 = 98.00 %.
	if !regexpLine(text, `\n\s+200 ms\s+88\.00\s`) || !regexpLine(text, `\n\s+500 ms\s+98\.00\s`) {
		t.Errorf("reliability rows missing:\n%s", text)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep model.MonitorReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Schema != model.MonitorSchema || len(rep.Stats) != 1 || rep.Stats[0].Sent != 600 || rep.Stats[0].Lost != 12 || rep.Stats[0].RTT.P50Ns != 20e6 {
		t.Fatalf("json: %+v", rep.Stats)
	}
	for _, r := range rep.Stats[0].Reliability {
		want := map[int64]uint64{30e6: 528, 200e6: 528, 500e6: 588}[r.LNs]
		if want != 0 && r.OK != want {
			t.Errorf("R(%d ms): %d ok, want %d", r.LNs/1e6, r.OK, want)
		}
	}
	// The saved JSON re-renders identically through sonde report.
	saved, err := report.Load(js)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := saved.WriteText(&again); err != nil {
		t.Fatal(err)
	}
	if again.String() != text {
		t.Errorf("sonde report of the saved JSON differs:\n%s\n---\n%s", again.String(), text)
	}
	c, _ := os.ReadFile(csvPath)
	if !strings.Contains(string(c), "198.18.0.2:862/stamp,198.18.0.2:862,stamp,0,200.000,600,12,6,528,0.880000,") {
		t.Errorf("csv:\n%s", c)
	}
}

func regexpLine(s, re string) bool { return regexp.MustCompile(re).MatchString(s) }

func TestMonitorReportErrors(t *testing.T) {
	db := monitorStore(t)
	usage := [][]string{
		{"--store", db, "--since", "0s"},
		{"--store", db, "--since", "11y"},
		{"--store", db, "--since", "4000d"},
		{"--store", db, "--since", "1d", "--from", "2026-01-01"},
		{"--store", db, "--from", "2026-01-02", "--to", "2026-01-01"},
		{"--store", db, "--from", "2000-01-01", "--to", "2026-01-01"},
		{"--store", db, "--from", "yesterday"},
		{"--store", db, "--threshold", "fast"},
		{"--store", db, "--threshold", "0ms"},
		{"--store", db, "--threshold", "2000s"},
		{"--store", db, "--profile", filepath.Join(t.TempDir(), "none.json")},
		{"--store", db, "--json", "-", "--html", "-"},
		{"--store", db, "--bogus"},
		{"--store", db, "extra"},
		{"--store", db, "--up", "fast"},
		{"--store", db, "--up-link-rate", "0"},
		{"--store", db, "--down-link-rate", "-8M"},
		{"--store", db, "--down-link-rate", "20T"},
		{"--store", db, "--up-link-rate", "700kB"},
	}
	for _, a := range usage {
		if _, stderr, code := runMonitorReport(a...); code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%q: exit %d, %q; want 2 and one line", a, code, stderr)
		}
	}
	bad := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(bad, []byte(`{"profiles":[{"name":"x","latency":"1s","reliability":1.5}]}`), 0o644)
	if _, stderr, code := runMonitorReport("--store", db, "--profile", bad); code != exitUsage || !strings.Contains(stderr, "reliability") {
		t.Errorf("bad profile: exit %d, %q", code, stderr)
	}
	for name, a := range map[string][]string{
		"no monitor": {"--store", db, "--name", "nope", "--from", "2026-01-01", "--to", "2026-01-02"},
		"no data":    {"--store", db, "--from", "2025-01-01", "--to", "2025-01-02"},
		"no store":   {"--store", filepath.Join(t.TempDir(), "none.db"), "--since", "1h"},
	} {
		_, stderr, code := runMonitorReport(a...)
		if code != exitFailure || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || stderr == "" {
			t.Errorf("%s: exit %d, %q; want 1 and one line", name, code, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("a report created a store")
	}
}

// FuzzMonitorReportFlags checks the time and threshold parsers never
// panic and never return a range the report refuses.
func FuzzMonitorReportFlags(f *testing.F) {
	for _, s := range []string{"24h", "7d", "1d12h", "-1d", "d", "1e308d", "NaNd", "2026-05-16", "2026-05-16T08:00:00Z", "30ms,100ms", ",", "9999999h", "700k", "1.5Gbit/s", "0", "1e400M"} {
		f.Add(s)
	}
	now := time.Unix(0, mrT0)
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := units.ParseDuration(s, maxReportRange); err == nil && (d < 0 || d > maxReportRange) {
			t.Fatalf("ParseDuration(%q) = %v", s, d)
		}
		if tm, err := units.ParseTime(s); err == nil && (tm.Year() < 1970 || tm.Year() > 2200) {
			t.Fatalf("ParseTime(%q) = %v", s, tm)
		}
		if ls, err := reliability.ParseThresholds(s); err == nil {
			for _, l := range ls {
				if l <= 0 {
					t.Fatalf("ParseThresholds(%q) = %v", s, ls)
				}
			}
		}
		if v, err := reportRate("--up-link-rate", s); err == nil && s != "" && !(v > 0 && v <= store.MaxCapacityBps) {
			t.Fatalf("reportRate(%q) = %g", s, v)
		}
		for _, args := range [][3]string{{s, "", ""}, {"", s, ""}, {"", "2026-01-01", s}} {
			from, to, err := reportRange(args[0], args[1], args[2], now)
			if err == nil && (!from.Before(to) || to.Sub(from) > maxReportRange) {
				t.Fatalf("reportRange(%q) = %v, %v", args, from, to)
			}
		}
	})
}

// loadedStore writes a monitor whose uplink, recorded by the daemon as
// 700 kbit/s configured, idles at 20 ms for a minute and then carries an
// upload whose delay saws from 300 to 450 ms for a minute: seed 001's
// ADSL buffer, 0.7 Mbit/s × 430 ms = 301 kbit.
func loadedStore(t *testing.T) string {
	t.Helper()
	b := &store.Batch{}
	for i := range 1200 {
		p := model.ProbeSample{Seq: uint32(i), SentNs: mrT0 + int64(i)*100e6, RTTNs: 20e6, Load: model.LoadIdle}
		if i >= 600 {
			p.RTTNs, p.Load = 300e6+int64(i%20)*150e6/19, model.LoadUp
		}
		b.Probes = append(b.Probes, p)
	}
	return oneStreamStore(t, b, &store.CapacityRow{FromNs: mrT0 - 1e9, UpBps: 0.7e6, UpSource: store.CapacityConfigured})
}

// TestMonitorReportCapacity: the inferred buffer of an episode read from
// raw samples uses the recorded capacity, and --up overrides it.
func TestMonitorReportCapacity(t *testing.T) {
	db := loadedStore(t)
	for _, c := range []struct {
		args []string
		bits float64
	}{
		{nil, 301e3},
		{[]string{"--up-link-rate", "1.4M"}, 602e3},
	} {
		js := filepath.Join(t.TempDir(), "r.json")
		args := append([]string{"--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:05:00Z", "--json", js}, c.args...)
		text, stderr, code := runMonitorReport(args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", c.args, code, stderr)
		}
		var rep model.MonitorReport
		b, _ := os.ReadFile(js)
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		var bits float64
		for _, e := range rep.Events {
			if e.Kind == model.EventLoaded {
				bits = e.Detail["buffer_bits"]
			}
		}
		if bits < c.bits*0.99 || bits > c.bits*1.01 {
			t.Errorf("%q: inferred buffer %.0f bit, want %.0f ± 1 %%", c.args, bits, c.bits)
		}
		if want := fmt.Sprintf("buffer ≈ %.0f kbit", bits/1e3); !strings.Contains(text, want) {
			t.Errorf("%q: text lacks %q:\n%s", c.args, want, text)
		}
	}
}

// TestProfileFlagAlias: --profile, the old spelling of --profiles in
// monitor report and fleet report, still works for one release and says
// what to use.
func TestProfileFlagAlias(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "none.json")
	for _, args := range [][]string{
		{"monitor", "report", "--store", filepath.Join(t.TempDir(), "m.db"), "--profile", bad},
		{"fleet", "report", "--store", filepath.Join(t.TempDir(), "f.db"), "--profile", bad},
	} {
		// cobra prints the deprecation where it prints usage (stderr
		// when the command's output is not set, as in main).
		stdout, stderr, code := run(t, args...)
		if code != exitUsage || !strings.Contains(stdout+stderr, "use --profiles instead") || !strings.Contains(stderr, "--profiles "+bad) {
			t.Errorf("%v: exit %d, %q %q; want 2, the file read as --profiles and the replacement named", args, code, stdout, stderr)
		}
	}
}
