package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// monitorFixture is a small monitor report: one stream, two thresholds,
// windows, a load state, a day, a series, CDFs and an event.
func monitorFixture(r200 float64) *model.MonitorReport {
	const t0 = int64(1_767_225_600_000_000_000)
	rel := func(l int64, r float64) model.Reliability {
		return model.Reliability{LNs: l, Sent: 1000, OK: uint64(r * 1000), R: r, Lower: r - 0.01, Upper: min(r+0.01, 1)}
	}
	rs := []model.Reliability{rel(100e6, 0.9), rel(200e6, r200)}
	return &model.MonitorReport{
		Schema: model.MonitorSchema, FromNs: t0, ToNs: t0 + 3600e9, Source: "raw", Monitor: "home", RawFromNs: t0,
		Streams: []model.MonitorStream{{Target: "198.18.0.2:862", Kind: model.ProbeSTAMP, Name: "198.18.0.2:862/stamp"}},
		Stats: []model.StreamReport{{Stream: 0, Sent: 1000, Lost: 20, Late: 5,
			RTT:         model.DelayStats{N: 980, MeanNs: 25e6, SDNs: 3e6, MinNs: 19e6, P50Ns: 20e6, P99Ns: 300e6, MaxNs: 430e6},
			Reliability: rs,
			Windows:     []model.WindowReliability{{WindowNs: 60e9, LNs: 200e6, Windows: 60, Worst: rel(200e6, 0.5), WorstStartNs: t0 + 600e9, P50: r200}},
			ByLoad: []model.LoadReliability{{Load: "loaded", Sent: 200, Reliability: []model.Reliability{rel(100e6, 0.6), rel(200e6, 0.95)}},
				{Load: "up-saturated", Sent: 100, Reliability: []model.Reliability{rel(100e6, 0.1), rel(200e6, 0.15)}}},
			Verdicts: []model.ProfileVerdict{{Profile: "voip", Verdict: model.VerdictFail, Fail: 1, WorstR: 0.5}},
		}},
		Daily:  []model.DailyStats{{Stream: 0, DayNs: t0, Sent: 1000, Lost: 20, P50Ns: 20e6, Reliability: rs}},
		Series: []model.MonitorSeries{{Stream: 0, BucketNs: 60e9, Points: []model.SeriesPoint{{StartNs: t0, Sent: 600, Lost: 3, P50Ns: 20e6, P99Ns: 40e6}, {StartNs: t0 + 60e9, Sent: 400, Lost: 17, P50Ns: 200e6, P99Ns: 430e6}}}},
		CDFs: []model.MonitorCDF{{Stream: 0, Load: "all", N: 980, Points: []model.CDFPoint{{RTTNs: 20e6, Fraction: 0.5}, {RTTNs: 430e6, Fraction: 1}}},
			{Stream: 0, Load: "up-saturated", N: 90, Points: []model.CDFPoint{{RTTNs: 200e6, Fraction: 0.5}, {RTTNs: 430e6, Fraction: 1}}}},
		Events: []model.MonitorEvent{{Kind: model.EventLoaded, StartNs: t0 + 600e9, EndNs: t0 + 660e9, Stream: 0, Text: "upload: +410 ms <F>", Flags: []string{"drop-tail"}}},
		Notes:  []string{"a note"},
	}
}

func TestMonitorHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMonitorHTML(&b, monitorFixture(0.95)); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkWellFormed(t, doc)
	checkSelfContained(t, doc)
	for _, want := range []string{"RTT distribution per load state", "up-saturated (90)", "RTT p50 and p99 per 1 min", "Probes lost per 1 min",
		"410 ms &lt;F&gt;", "seed 001 Table 20", "95.00"} {
		if !strings.Contains(doc, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if n := strings.Count(doc, "<svg"); n != 3 {
		t.Errorf("%d charts, want 3", n)
	}
}

func TestMonitorCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMonitorCSV(&b, monitorFixture(0.95)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// A loaded (unsaturated) link has its own column, apart from idle and unknown.
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ",r_idle,r_loaded,r_up-saturated,r_down-saturated,r_both-saturated,r_unknown") ||
		!strings.HasPrefix(lines[2], "198.18.0.2:862/stamp,198.18.0.2:862,stamp,0,200.000,1000,20,5,950,0.950000,0.940000,0.960000,0.500000,2026-01-01T00:10:00Z,,0.950000,0.150000,,,") {
		t.Errorf("csv:\n%s", b.String())
	}
	b.Reset()
	if err := WriteMonitorSeriesCSV(&b, monitorFixture(0.95)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "198.18.0.2:862/stamp,2026-01-01T00:01:00Z,60,400,17,4.250,200.000,430.000") {
		t.Errorf("series csv:\n%s", b.String())
	}
}

func TestMonitorSavedAndCompare(t *testing.T) {
	var direct, again bytes.Buffer
	r := monitorFixture(0.95)
	if err := WriteMonitorText(&direct, r); err != nil {
		t.Fatal(err)
	}
	if err := decode(t, "a", r).WriteText(&again); err != nil {
		t.Fatal(err)
	}
	if direct.String() != again.String() {
		t.Errorf("saved text differs:\n%s\n---\n%s", again.String(), direct.String())
	}
	var out bytes.Buffer
	if err := WriteCompareText(&out, []*Saved{decode(t, "a", r), decode(t, "b", monitorFixture(0.99))}); err != nil {
		t.Fatal(err)
	}
	if l := lineWith(out.String(), "R(200 ms)"); !strings.Contains(l, "95.00 %") || !strings.Contains(l, "+4.00 points") {
		t.Errorf("R(200 ms) row %q in\n%s", l, out.String())
	}
}
