//go:build !monitoronly

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// fleetStore writes three monitors: a and b of isp=x down together (an
// upstream event by half of isp=x), c of isp=y down alone; each with one
// stream and ten minutes from mrT0, b losing one probe in 100.
func fleetStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fleet.db")
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	an, _ := reliability.New(reliability.Config{}, nil)
	for i, name := range []string{"a", "b", "c"} {
		isp := map[bool]string{true: "x", false: "y"}[i < 2]
		mid, err := st.Monitor(ctx, store.Identity{Name: name, Labels: map[string]string{"isp": isp}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Streams(ctx, mid, []model.MonitorStream{{Target: "198.18.0.2:862", Kind: model.ProbeSTAMP, Name: "s"}}); err != nil {
			t.Fatal(err)
		}
		b := &store.Batch{}
		r := reliability.NewRoller(an.ThresholdsNs(), func(m model.MonitorRollup) {
			sr, err := store.RollupFrom(m)
			if err != nil {
				t.Fatal(err)
			}
			b.Rollups = append(b.Rollups, sr)
		})
		for k := range 6000 {
			p := model.ProbeSample{Seq: uint32(k), SentNs: mrT0 + int64(k)*100e6, RTTNs: 20e6}
			if name == "b" && k%100 == 0 {
				p.Lost, p.RTTNs = true, -1
			}
			if err := r.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		r.Flush()
		start := mrT0 + 120e9
		if name == "c" {
			start = mrT0 + 420e9
		}
		b.Events = []model.MonitorEvent{{Kind: model.EventOutage, StartNs: start, EndNs: start + 60e9, Stream: -1, Text: "outage", Flags: []string{"link"}}}
		if err := st.Write(ctx, mid, b); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestFleetReportCLI(t *testing.T) {
	db := fleetStore(t)
	dir := t.TempDir()
	js, html, csvPath := filepath.Join(dir, "f.json"), filepath.Join(dir, "f.html"), filepath.Join(dir, "f.csv")
	text, stderr, code := runCmd(newFleetCmd(), "report", "--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:10:00Z",
		"--json", js, "--html", html, "--csv", csvPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`monitors\s+3 \(all monitors\)`, `\nUpstream events`, `a, b\n`, `\s+c\s+isp=y\s+6000\s+0\.000\s+.*line`, `\s+b\s+isp=x\s+6000\s+1\.000\s+.*upstream`} {
		if !regexpLine(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep model.FleetReport
	if err := json.Unmarshal(raw, &rep); err != nil || rep.Schema != model.FleetSchema || len(rep.Upstream) != 1 {
		t.Fatalf("JSON: %v, schema %q, %d upstream events", err, rep.Schema, len(rep.Upstream))
	}
	if b, _ := os.ReadFile(csvPath); strings.Count(string(b), "\n") != 1+3*len(rep.Profiles) {
		t.Errorf("CSV has %d lines, want a head and %d rows", strings.Count(string(b), "\n"), 3*len(rep.Profiles))
	}
	if b, _ := os.ReadFile(html); !strings.Contains(string(b), "Upstream events") || !strings.Contains(string(b), "schema sonde.fleet/v1") {
		t.Error("HTML lacks the upstream table or the schema")
	}
	// sonde report re-renders the saved JSON: the same text.
	again, stderr, code := runCmd(newReportCmd(), js)
	if code != 0 || again != text {
		t.Errorf("sonde report of the saved JSON: exit %d %s; differs from the report:\n%s", code, stderr, again)
	}
	// The label filter.
	text, _, code = runCmd(newFleetCmd(), "report", "--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:10:00Z", "--label", "isp=y")
	if code != 0 || !regexpLine(text, `monitors\s+1 \(isp=y\)`) {
		t.Errorf("--label isp=y: exit %d\n%s", code, text)
	}
	// The aggregate job, then the same figures.
	out, stderr, code := runCmd(newFleetCmd(), "aggregate", "--store", db)
	if code != 0 || !strings.Contains(out, "merged 3 stream-hours") {
		t.Errorf("aggregate: exit %d %q %s", code, out, stderr)
	}
}

func TestFleetReportErrors(t *testing.T) {
	db := fleetStore(t)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"report"}, 2, "--store: give the fleet's store"},
		{[]string{"report", "--store", "ftp://x"}, 2, "--store:"},
		{[]string{"report", "--store", db, "--label", "isp"}, 2, `--label: label term "isp": want KEY=VALUE`},
		{[]string{"report", "--store", db, "--upstream-min", "1"}, 2, "upstream minimum of 1 monitors"},
		{[]string{"report", "--store", db, "--upstream-share", "1.5"}, 2, "upstream share 1.5"},
		{[]string{"report", "--store", db, "--since", "0d"}, 2, "--since"},
		{[]string{"report", "--store", db, "--json", "/nonexistent/dir/f.json"}, 2, "--json"},
		{[]string{"report", "--store", filepath.Join(t.TempDir(), "missing.db")}, 1, "missing.db"},
		{[]string{"aggregate", "--store", db, "--max-hours", "-1"}, 2, "--max-hours -1"},
		{[]string{"serve", "--store", db, "--listen", "nope"}, 2, `--listen "nope"`},
		{[]string{"serve"}, 2, "--store: give"},
	}
	for _, c := range cases {
		_, stderr, code := runCmd(newFleetCmd(), c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q on one line", c.args, code, stderr, c.code, c.want)
		}
	}
	// An empty store is a report that says so, exit 0.
	empty := filepath.Join(t.TempDir(), "empty.db")
	st, err := store.Open(context.Background(), empty, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	text, stderr, code := runCmd(newFleetCmd(), "report", "--store", empty)
	if code != 0 || !strings.Contains(text, "the store holds no monitor") {
		t.Errorf("empty store: exit %d %s\n%s", code, stderr, text)
	}
}
