package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// sliceSpill is a model.RecordSpill over slices: an analysis whose records
// are not in its TCP and QUIC.
type sliceSpill struct {
	tcp  []model.TCPConn
	quic []model.QUICConn
}

func (s *sliceSpill) Len() (int, int) { return len(s.tcp), len(s.quic) }
func (s *sliceSpill) EachTCP(fn func(*model.TCPConn) error) error {
	for i := range s.tcp {
		if err := fn(&s.tcp[i]); err != nil {
			return err
		}
	}
	return nil
}
func (s *sliceSpill) EachQUIC(fn func(*model.QUICConn) error) error {
	for i := range s.quic {
		if err := fn(&s.quic[i]); err != nil {
			return err
		}
	}
	return nil
}

// streamFixture is an analysis with TCP (one with HTTP, one with a
// character JSON escapes), QUIC, pages and notes.
func streamFixture() *model.Analysis {
	r := analysisFixture(3)
	r.TCP[1].HTTP = &model.HTTPConn{Version: "HTTP/1.1", Requests: 1, Responses: 1, Exchanges: []model.HTTPExchange{{Method: "GET", Path: "/a<b>&c", Status: 200}}}
	r.TCP[2].AB.GoodputSeries = []float64{1, 2.5, 0}
	r.QUIC = []model.QUICConn{{Client: "198.18.0.1:5000", Server: "198.18.0.2:443", Version: "v1", Spin: "spinning", SpinRTT: [2]model.RTTSummary{{Samples: 4, MinMs: 1, MedianMs: 2, MaxMs: 3}}}}
	r.HTTPPages = []model.HTTPPage{{Client: "198.18.0.1", Requests: 1}}
	r.Notes = []string{"a note"}
	return r
}

// TestWriteAnalysisJSON: the streamed JSON is byte for byte WriteJSON's,
// with the records in memory or spilled, and without records.
func TestWriteAnalysisJSON(t *testing.T) {
	for name, r := range map[string]*model.Analysis{"records": streamFixture(), "none": analysisFixture(0)} {
		var want bytes.Buffer
		if err := WriteJSON(&want, r); err != nil {
			t.Fatal(err)
		}
		spilled := *r
		spilled.Spill, spilled.TCP, spilled.QUIC = &sliceSpill{r.TCP, r.QUIC}, nil, nil
		for form, a := range map[string]*model.Analysis{"kept": r, "spilled": &spilled} {
			var got bytes.Buffer
			if err := WriteAnalysisJSON(&got, a); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("%s, %s: got\n%s\nwant\n%s", name, form, got.String(), want.String())
			}
		}
	}
}

// TestAnalyzeTextSpilled: the text of a spilled analysis is that of the
// same records in memory (column widths from every record, HTTP tables).
func TestAnalyzeTextSpilled(t *testing.T) {
	r := streamFixture()
	var want, got bytes.Buffer
	if err := WriteAnalyzeText(&want, r); err != nil {
		t.Fatal(err)
	}
	spilled := *r
	spilled.Spill, spilled.TCP, spilled.QUIC = &sliceSpill{r.TCP, r.QUIC}, nil, nil
	if err := WriteAnalyzeText(&got, &spilled); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.String(), "HTTP/1.x connections") || !strings.Contains(want.String(), "QUIC flows") {
		t.Fatalf("the fixture's text lacks a table:\n%s", want.String())
	}
	if got.String() != want.String() {
		t.Errorf("spilled text:\n%s\nwant\n%s", got.String(), want.String())
	}
}

// TestNDJSON: one compact line per value, counted.
func TestNDJSON(t *testing.T) {
	var b bytes.Buffer
	nw := NewNDJSON(&b)
	nw.Write(map[string]int{"a": 1})
	nw.Write([]int{2})
	if err := nw.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.String() != "{\"a\":1}\n[2]\n" || nw.Lines() != 2 {
		t.Errorf("got %q, %d lines", b.String(), nw.Lines())
	}
}
