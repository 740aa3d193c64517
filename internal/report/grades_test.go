package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/grade"
	"github.com/sonde-project/sonde/internal/model"
)

// A result's grades (as assemble.Finish gives them) show the same letters
// in text and HTML; a saved result without grades renders without them,
// as it did when it was saved.
func TestGradesRendered(t *testing.T) {
	r := &model.Result{Schema: model.SchemaVersion,
		Baseline: &model.RTTResult{RTTMs: model.Stats{N: 10, Mean: 20, P50: 20}},
		Download: &model.DirectionResult{Direction: "download", GoodputBps: 200e6,
			Latency: &model.RTTResult{RTTMs: model.Stats{N: 10, Mean: 270, P50: 260}}},
	}
	var bare bytes.Buffer
	if err := WriteText(&bare, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(bare.String(), "Grades") {
		t.Errorf("a result without grades shows a Grades section:\n%s", bare.String())
	}
	r.Grades = grade.Of(r)
	var txt, html bytes.Buffer
	if err := WriteText(&txt, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bufferbloat download D", "+250.0 ms mean under load", "gaming", "A+ < 5"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	for _, want := range []string{`id="grades"`, ">Bufferbloat<", ">D<", ">Gaming<"} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
