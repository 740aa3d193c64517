package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustSonde(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, args...)
	if code != 0 {
		t.Fatalf("sonde %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The saved JSON is the source of truth: `sonde report` on a result saved
// with --json prints the text the run printed and writes the same HTML.
func TestReportReRendersRuns(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"test", []string{"test", "-t", "1s"}},
		{"udp", []string{"udp", "-t", "300ms", "--probe-interval", "10ms", "--timeout", "1s"}},
	} {
		js, page := filepath.Join(dir, tc.name+".json"), filepath.Join(dir, tc.name+".html")
		printed := mustSonde(t, append(tc.args, "--json", js, "--html", page)...)
		again := mustSonde(t, "report", js)
		if again != printed || printed == "" {
			t.Errorf("%s: re-rendered text differs from the run's:\n%s\nrun printed:\n%s", tc.name, again, printed)
		}
		pageAgain := filepath.Join(dir, tc.name+"-again.html")
		if out := mustSonde(t, "report", "--html", pageAgain, js); out != printed {
			t.Errorf("%s: --html FILE changed the text on stdout", tc.name)
		}
		if a, b := readFile(t, pageAgain), readFile(t, page); a != b {
			t.Errorf("%s: re-rendered HTML differs from the run's (%d vs %d bytes)", tc.name, len(a), len(b))
		}
		// With - the page alone goes to stdout.
		if out := mustSonde(t, "report", "--html", "-", js); out != readFile(t, page) {
			t.Errorf("%s: --html - is not the page alone", tc.name)
		}
		cmp := mustSonde(t, "report", js, js)
		if !strings.Contains(cmp, "#2 − #1") || !strings.Contains(cmp, "#1  "+js) {
			t.Errorf("%s: comparison:\n%s", tc.name, cmp)
		}
		csv := mustSonde(t, "report", "--csv", "-", js, js)
		if !strings.HasPrefix(csv, "figure,unit,"+js+","+js+"\n") || strings.Count(csv, "\n") < 3 {
			t.Errorf("%s: csv:\n%s", tc.name, csv)
		}
	}
}

func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const run0 = `"id":"x","start":"2025-01-01T00:00:00Z","end":"2025-01-01T00:00:01Z","client":{},"server":{},"config":{}`
	udp := write("u.json", `{"schema":"sonde.udp/v1",`+run0+`,"flows":[]}`)
	res := write("r.json", `{"schema":"sonde.result/v1",`+run0+`}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "requires at least 1 arg"},
		{[]string{"report", filepath.Join(dir, "none.json")}, "no such file"},
		{[]string{"report", write("x.json", `{"schema":"sonde.mbm/v7"}`)}, `unknown schema "sonde.mbm/v7"`},
		{[]string{"report", write("n.json", `not json`)}, "not a saved sonde result"},
		{[]string{"report", udp, res}, "cannot compare results of different kinds"},
		// A known schema over empty or another kind's content.
		{[]string{"report", write("e.json", `{"schema":"sonde.result/v1"}`)}, "its schema says sonde.result/v1, but it holds no result"},
		{[]string{"report", write("m.json", `{"schema":"sonde.monitor/v1"}`)}, "its schema says sonde.monitor/v1, but it holds no result"},
		{[]string{"report", write("o.json", `{"schema":"sonde.result/v1",`+run0+`,"flows":[]}`)}, "its content is a sonde.udp/v1 result"},
		{[]string{"report", "--html", "-", "--csv", "-", udp}, "only one output"},
		{[]string{"report", "--csv", filepath.Join(dir, "no", "dir.csv"), udp}, "--csv"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") > 1 {
			t.Errorf("%v: exit %d, %q; want exit %d and one line with %q", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("a failed run created an output directory")
	}
}
