//go:build !monitoronly

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
)

// TestMBMComposePath: --path records the end-to-end result's loss beside
// the composed one; a result for another target is refused.
func TestMBMComposePath(t *testing.T) {
	dir := t.TempDir()
	b, _ := mbm.EqualBudgets(1.0/5808, 2)
	a := subpathResult(t, dir, "a", b[0], "FAIL", 2000, 20)
	c := subpathResult(t, dir, "c", b[1], "FAIL", 3000, 30)
	e := subpathResult(t, dir, "e2e", 0, "FAIL", 2500, 50)
	out, stderr, code := run(t, "mbm", "compose", a, c, "--path", e, "--json", "-")
	var comp model.MBMComposition
	if code != exitVerdict || json.Unmarshal([]byte(out), &comp) != nil {
		t.Fatalf("exit %d: %s %s", code, stderr, out)
	}
	m := comp.Tests[0].Measured
	if comp.Path != e || m == nil || m.Loss != 0.02 || m.Packets != 2500 || m.Verdict != "FAIL" {
		t.Errorf("measured %+v, path %q", m, comp.Path)
	}
	if got := comp.Tests[0].SubpathPackets; len(got) != 2 || got[0] != 2000 || got[1] != 3000 {
		t.Errorf("subpath packets %v", got)
	}
	text, _, _ := run(t, "mbm", "compose", a, c, "--path", e)
	if !strings.Contains(text, "measured end to end: FAIL, loss 0.02 (50 of 2500 packets") {
		t.Errorf("text: %s", text)
	}
	other := otherTargetResult(t, dir)
	if _, stderr, code := run(t, "mbm", "compose", a, c, "--path", other); code != exitUsage || !strings.Contains(stderr, "--path") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("--path of another target: exit %d %q", code, stderr)
	}
}

// TestMBMSummaryCmd: a directory of results and compositions gives the
// groups, the Q-Q, every output, and sonde report renders the saved
// summary as the command printed it.
func TestMBMSummaryCmd(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	b, _ := mbm.EqualBudgets(1.0/5808, 2)
	for i, n := range []int64{2000, 2100, 2200} {
		// Each run's files in a directory of its own (subpaths a and c
		// keep their names), then copied into in under unique names.
		d := filepath.Join(dir, string(rune('0'+i)))
		os.Mkdir(d, 0o755)
		a := subpathResult(t, d, "a", b[0], "FAIL", n, 20+int64(i))
		c := subpathResult(t, d, "c", b[1], "FAIL", n, 10)
		e := subpathResult(t, d, "", 0, "FAIL", n, 30)
		if _, stderr, code := run(t, "mbm", "compose", a, c, "--path", e, "--json", filepath.Join(in, "comp"+string(rune('0'+i))+".json"), "-q"); code != exitVerdict {
			t.Fatalf("compose: exit %d %s", code, stderr)
		}
		for _, f := range []string{a, c, e} {
			raw, _ := os.ReadFile(f)
			os.WriteFile(filepath.Join(in, string(rune('0'+i))+filepath.Base(f)), raw, 0o644)
		}
	}
	os.WriteFile(filepath.Join(in, "notes.txt"), []byte("not read"), 0o644)
	js, html, csv := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.html"), filepath.Join(dir, "s.csv")
	out, stderr, code := run(t, "mbm", "summary", in, "--json", js, "--html", html, "--csv", csv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, _ := os.ReadFile(js)
	var s model.MBMSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	// Groups: subpath a, subpath c (budgets), e (p0): three runs each.
	if s.Schema != model.MBMSummarySchemaVersion || s.Results != 9 || s.Compositions != 3 || len(s.Groups) != 3 {
		t.Fatalf("summary: %d results, %d compositions, %d groups", s.Results, s.Compositions, len(s.Groups))
	}
	for _, g := range s.Groups {
		if g.Runs != 3 || g.Verdicts.Fail != 3 || g.DecisionPackets.N != 0 {
			t.Errorf("group %+v", g) // subpathResult records no UDP decision
		}
	}
	if s.Compose == nil || len(s.Compose.QQ) != 3 {
		t.Fatalf("compose summary %+v", s.Compose)
	}
	if !strings.Contains(out, "MBM summary: 9 results, 3 compositions, 3 groups") || !strings.Contains(out, "Q-Q (sorted composed") {
		t.Errorf("text: %s", out)
	}
	h, _ := os.ReadFile(html)
	if !strings.Contains(string(h), "<svg") || !strings.Contains(string(h), "composed vs measured end-to-end loss (Q-Q)") {
		t.Error("HTML lacks the Q-Q chart")
	}
	c, _ := os.ReadFile(csv)
	if strings.Count(string(c), "\n") != 4 {
		t.Errorf("CSV: %s", c)
	}
	again, stderr, code := run(t, "report", js)
	if code != 0 || again != out {
		t.Errorf("sonde report of the summary: exit %d %s\n%s\nwant\n%s", code, stderr, again, out)
	}
}

func TestMBMSummaryBadInput(t *testing.T) {
	dir := t.TempDir()
	good := subpathResult(t, dir, "good", 0, "PASS", 6000, 0)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	plan := filepath.Join(dir, "plan.json")
	if _, stderr, code := run(t, "mbm", "--plan", "--rate", "10M", "--rtt", "50ms", "--json", plan); code != 0 {
		t.Fatal(stderr)
	}
	for _, args := range [][]string{
		{"mbm", "summary"},
		{"mbm", "summary", filepath.Join(dir, "missing.json")},
		{"mbm", "summary", good, write("junk.json", "{not json")},
		{"mbm", "summary", good, write("test.json", `{"schema":"sonde.result/v1"}`)},
		{"mbm", "summary", good, write("noschema.json", `{}`)},
		{"mbm", "summary", good, write("verdict.json", `{"schema":"sonde.mbm/v1","tests":[{"id":"8.1.1","verdict":"MAYBE"}]}`)},
		{"mbm", "summary", good, write("neg.json", `{"schema":"sonde.mbm/v1","tests":[{"id":"8.1.1","verdict":"PASS","packets":-1}]}`)},
		{"mbm", "summary", good, write("longid.json", `{"schema":"sonde.mbm/v1","tests":[{"id":"`+strings.Repeat("8", 100)+`","verdict":"PASS"}]}`)},
		{"mbm", "summary", good, plan},
		{"mbm", "summary", empty},
		{"mbm", "summary", good, "--json", dir},
		{"mbm", "summary", good, "-q"},
		{"mbm", "summary", good, "--json", "-", "--csv", "-"},
	} {
		_, stderr, code := run(t, args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("sonde %s: exit %d, %q: want 2 and one line", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestMBMSummaryFileCount: more than report.MaxMBMFiles is refused before
// any is read.
func TestMBMSummaryFileCount(t *testing.T) {
	args := make([]string, report.MaxMBMFiles+1)
	good := subpathResult(t, t.TempDir(), "g", 0, "PASS", 6000, 0)
	for i := range args {
		args[i] = good
	}
	if _, err := report.MBMFiles(args); err == nil || !strings.Contains(err.Error(), "more than 10000 files") {
		t.Errorf("%d files: %v", len(args), err)
	}
}

// FuzzMBMSummaryInput: any file is refused in one line or summarized and
// rendered, never a panic.
func FuzzMBMSummaryInput(f *testing.F) {
	f.Add([]byte(`{"schema":"sonde.mbm/v1","target":{"rate_bps":1e7},"model":{"p0":1e-4,"p1":4e-4},"tests":[{"id":"8.5.1","transport":"udp","verdict":"FAIL","packets":12,"marks":1,"loss":0.083,"udp":{"derate":0.8,"burst_packets":12,"decision_packets":12}}]}`))
	f.Add([]byte(`{"schema":"sonde.mbm-compose/v1","tests":[{"id":"8.1.1","loss":0.02,"subpath_packets":[2000,2000],"measured":{"verdict":"FAIL","packets":2000,"loss":0.018}}]}`))
	f.Add([]byte(`{"schema":"sonde.mbm/v1","tests":[{"id":"x","verdict":"ERROR","packets":9223372036854775807,"udp":{"decision_packets":-4}}]}`))
	f.Add([]byte(`{"schema":"sonde.mbm/v1","plan":true}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "f.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, c, err := report.LoadMBM(path)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		s := report.NewMBMSummarizer()
		if r != nil {
			s.AddResult(r)
		} else {
			s.AddComposition(c)
		}
		sum := s.Summary()
		var sb strings.Builder
		if err := report.WriteMBMSummaryText(&sb, &sum); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteMBMSummaryHTML(&sb, &sum); err != nil {
			t.Fatal(err)
		}
	})
}
