package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func fleetFixture() *model.FleetReport {
	prof := []model.RequirementProfile{{Name: "voip", LatencyNs: 150e6, Reliability: 0.99}}
	return &model.FleetReport{
		Schema: model.FleetSchema, FromNs: 1_767_225_600e9, ToNs: 1_767_225_600e9 + 3600e9, Profiles: prof,
		UpstreamMin: 3, UpstreamShare: 0.5, Source: "1 hourly aggregates, 0 minute rollups",
		Monitors: []model.FleetMonitor{
			{Name: "home <1>", Labels: map[string]string{"isp": "a&b"}, Streams: 1, Sent: 36000, Lost: 720,
				RTT:      model.DelayStats{N: 35280, P50Ns: 20e6, P95Ns: 31e6},
				Verdicts: []model.FleetVerdict{{Profile: "voip", Whole: model.Reliability{Sent: 36000, OK: 35280, R: 0.98}, Verdict: model.VerdictFail, Hours: 1, FailHours: 1}},
				Outages:  []model.FleetOutage{{StartNs: 1_767_225_600e9 + 60e9, EndNs: 1_767_225_600e9 + 120e9, Scope: "link", Upstream: 1}},
				Cause:    model.CauseUpstream, Up: model.FleetOutageTime{Count: 1, Seconds: 60}, Worst: "C"},
		},
		Groups:   []model.FleetGroup{{Label: "isp", Value: "a&b", Monitors: 1, Sent: 36000, Lost: 720, Verdicts: []model.FleetVerdict{{Profile: "voip", Verdict: model.VerdictFail}}, Failing: []int{1}}},
		Upstream: []model.FleetUpstreamEvent{{StartNs: 1_767_225_600e9 + 60e9, EndNs: 1_767_225_600e9 + 120e9, Monitors: []string{"home <1>"}, Rule: "≥ 3 monitors"}},
	}
}

func TestFleetRenderers(t *testing.T) {
	r := fleetFixture()
	var text, html, csv bytes.Buffer
	if err := WriteFleetText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"home <1>  isp=a&b  36000   2.000", "FAIL 98.00", "upstream #1", "whole link", "1 (1 min)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if err := WriteFleetHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(html.String()); err != nil {
		t.Fatalf("HTML not well-formed: %v", err)
	}
	if strings.Contains(html.String(), "home <1>") || !strings.Contains(html.String(), "home &lt;1&gt;") {
		t.Error("HTML does not escape a monitor's name")
	}
	if err := WriteFleetCSV(&csv, r); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "home <1>,isp=a&b,voip,150.000,0.99,FAIL,36000,35280,0.980000") {
		t.Errorf("CSV:\n%s", csv.String())
	}
	// A saved fleet report loads by its schema and renders the same text.
	path := filepath.Join(t.TempDir(), "fleet.json")
	b, _ := json.Marshal(r)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil || s.Schema() != model.FleetSchema {
		t.Fatalf("Load: %v", err)
	}
	if err := WriteFleetText(&bytes.Buffer{}, nil); err == nil {
		t.Error("nil report rendered")
	}
}
