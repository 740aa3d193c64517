package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// A result with a bidirectional phase shows both of its directions, with
// the phase's latency under load and its own bufferbloat letter, in text
// and HTML alike.
func TestBidirReport(t *testing.T) {
	lat := &model.RTTResult{RTTMs: model.Stats{N: 50, Min: 20, P50: 60, P90: 80, P99: 90, Mean: 62}}
	r := &model.Result{Schema: model.SchemaVersion, ID: "x",
		Baseline: &model.RTTResult{RTTMs: model.Stats{N: 30, Min: 19, P50: 20, P90: 21, Mean: 20}},
		Bidir: &model.BidirResult{StartS: 20, DurationS: 10, Latency: lat,
			Download: &model.DirectionResult{Direction: "download", Streams: 2, DurationS: 10, GoodputBps: 81e6},
			Upload:   &model.DirectionResult{Direction: "upload", Streams: 2, DurationS: 10, GoodputBps: 17e6}},
		Grades: &model.Grades{Bufferbloat: &model.BufferbloatGrade{IdleMs: 20,
			Bidir: &model.LetterGrade{AddedMs: 42, LoadedMs: 62, Grade: "B"}}},
	}
	var text, html bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Bidirectional: download (at once with upload)", "Bidirectional: upload (at once with download)",
		"81.0 Mbit/s", "17.0 Mbit/s", "median 60.0", "bufferbloat bidir B", "download and upload at once add"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{"Bidirectional: download", "Bidirectional: upload", "81.0 Mbit/s", "17.0 Mbit/s"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
