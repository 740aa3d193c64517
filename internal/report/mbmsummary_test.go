package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// svgCounts parses an SVG (or a page holding several) as XML and counts
// its elements by "tag" and "tag.class", with the y of each dashed
// reference line by its title.
func svgCounts(t *testing.T, doc string) (map[string]int, map[string][]float64) {
	t.Helper()
	n, refs := map[string]int{}, map[string][]float64{}
	d := xml.NewDecoder(strings.NewReader(doc))
	var refY float64
	inRef := false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			n[el.Name.Local]++
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					n[el.Name.Local+"."+a.Value]++
					if a.Value == "ref" {
						inRef = true
					}
				}
				if a.Name.Local == "y1" && inRef {
					refY, _ = strconv.ParseFloat(a.Value, 64)
				}
			}
		case xml.CharData:
			if inRef && len(strings.TrimSpace(string(el))) > 0 {
				label := strings.Fields(string(el))[0]
				refs[label] = append(refs[label], refY)
				inRef = false
			}
		}
	}
	return n, refs
}

// burstFixture is a lab's sustained burst runs: 8.5.1 at derates 0.4,
// 0.8 and 1 (three runs each), 8.1.1 twice, all with p0 1.5e-3.
func burstFixture() []*model.MBMResult {
	mk := func(id string, derate float64, burst int64, verdict model.MBMVerdict, n, m, decided int64) *model.MBMResult {
		return &model.MBMResult{Schema: model.MBMSchemaVersion, Target: model.MBMTarget{RateBps: 10e6, RTTMs: 17, MTUBytes: 1500, HeaderOverheadBytes: 52},
			Model: model.MBMModel{P0: 0.0015, P1: 0.006, PathP0: 0.0015},
			Tests: []model.MBMTest{{ID: id, Name: "t" + id, Transport: "udp", Verdict: verdict, Packets: n, Marks: m, Loss: float64(m) / float64(n),
				UDP: &model.MBMUDP{Derate: derate, BurstPackets: burst, DecisionPackets: decided}}}}
	}
	return []*model.MBMResult{
		mk("8.1.1", 0, 1, "PASS", 2000, 0, 2000),
		mk("8.1.1", 0, 1, "PASS", 2000, 0, 2000),
		mk("8.5.1", 0.4, 6, "PASS", 2000, 0, 2000),
		mk("8.5.1", 0.4, 6, "PASS", 2000, 0, 2000),
		mk("8.5.1", 0.4, 6, "PASS", 2000, 0, 2000),
		mk("8.5.1", 0.8, 12, "FAIL", 12, 1, 12),
		mk("8.5.1", 0.8, 12, "FAIL", 24, 2, 24),
		mk("8.5.1", 0.8, 12, "FAIL", 36, 3, 36),
		mk("8.5.1", 1, 15, "FAIL", 14, 3, 14),
		mk("8.5.1", 1, 15, "FAIL", 28, 6, 28),
		mk("8.5.1", 1, 15, "INCONCLUSIVE", 100, 20, 0),
	}
}

func composeFixture() []*model.MBMComposition {
	mk := func(comp, meas float64, n int64) *model.MBMComposition {
		return &model.MBMComposition{Schema: model.MBMComposeSchemaVersion, PathP0: 0.001, Path: "e2e.json",
			Tests: []model.MBMComposedTest{{ID: "8.1.1", Verdict: "FAIL", Loss: comp, SubpathPackets: []int64{n, 2000},
				Measured: &model.MBMMeasured{Verdict: "FAIL", Packets: 2000, Loss: meas}}}}
	}
	return []*model.MBMComposition{mk(0.02, 0.018, 2000), mk(0.01, 0.012, 2000), mk(0.03, 0.035, 500),
		{Schema: model.MBMComposeSchemaVersion, Tests: []model.MBMComposedTest{{ID: "8.1.1", Loss: 0.5}}}} // no --path: no point
}

func summarize(rs []*model.MBMResult, cs []*model.MBMComposition) model.MBMSummary {
	s := NewMBMSummarizer()
	for _, r := range rs {
		s.AddResult(r)
	}
	for _, c := range cs {
		s.AddComposition(c)
	}
	return s.Summary()
}

func TestMBMSummaryGroups(t *testing.T) {
	s := summarize(burstFixture(), composeFixture())
	if s.Results != 11 || s.Compositions != 4 || len(s.Groups) != 4 {
		t.Fatalf("results %d, compositions %d, groups %d: want 11, 4, 4", s.Results, s.Compositions, len(s.Groups))
	}
	g := s.Groups[2] // 8.5.1 derate 0.8
	if g.TestID != "8.5.1" || g.Derate != 0.8 || g.BurstPackets != 12 || g.Runs != 3 || g.Verdicts.Fail != 3 {
		t.Errorf("group 3: %+v", g)
	}
	// Losses 1/12 each: no spread.
	if math.Abs(g.Loss.Min-1.0/12) > 1e-12 || g.Loss.Max != g.Loss.Min || g.Loss.N != 3 {
		t.Errorf("loss %+v", g.Loss)
	}
	if d := g.DecisionPackets; d.Min != 12 || d.Median != 24 || d.Max != 36 || d.Q1 != 18 || d.Q3 != 30 {
		t.Errorf("decision packets %+v: want 12, 18, 24, 30, 36", d)
	}
	g = s.Groups[3] // derate 1: the INCONCLUSIVE run has a loss but no decision
	if g.Verdicts.Inconclusive != 1 || g.Loss.N != 3 || g.DecisionPackets.N != 2 {
		t.Errorf("derate 1: %+v", g)
	}
	if s.Groups[0].BurstPackets != 0 {
		t.Errorf("8.1.1 keeps its burst of 1 in the key: %+v", s.Groups[0])
	}
	// Decided: 2000 ×5 (PASS, bin 1024–2047), 12 (8–15), 24, 28 (16–31), 36 (32–63), 14 (8–15).
	want := []model.MBMDecideBin{{Low: 8, High: 15, Fail: 2}, {Low: 16, High: 31, Fail: 2}, {Low: 32, High: 63, Fail: 1},
		{Low: 64, High: 127}, {Low: 128, High: 255}, {Low: 256, High: 511}, {Low: 512, High: 1023}, {Low: 1024, High: 2047, Pass: 5}}
	if len(s.Decide) != len(want) {
		t.Fatalf("decide %+v", s.Decide)
	}
	for i := range want {
		if s.Decide[i] != want[i] {
			t.Errorf("bin %d: %+v, want %+v", i, s.Decide[i], want[i])
		}
	}
	c := s.Compose
	if c == nil || len(c.Points) != 3 || len(c.QQ) != 2 || len(c.QQAll) != 3 {
		t.Fatalf("compose %+v", c)
	}
	// Over 1000: composed {0.01, 0.02}, measured {0.012, 0.018}.
	if c.QQ[0] != (model.MBMQQPair{Composed: 0.01, Measured: 0.012}) || math.Abs(c.MaxDeviation-0.002) > 1e-12 || math.Abs(c.MaxDeviationAll-0.005) > 1e-12 {
		t.Errorf("Q-Q %+v, max %g, all %g", c.QQ, c.MaxDeviation, c.MaxDeviationAll)
	}
}

func TestMBMSummaryText(t *testing.T) {
	s := summarize(burstFixture(), composeFixture())
	var b bytes.Buffer
	if err := WriteMBMSummaryText(&b, &s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"MBM summary: 11 results, 4 compositions, 4 groups",
		"8.5.1 udp derate 0.8 burst 12",
		"FAIL 2, INCONCLUSIVE 1",
		"0.08333  0.08333  0.08333  0.08333  0.08333",
		"12    18      24    30    36\n",
		"       8–15      PASS 0    FAIL 2    FF\n",
		"max |composed − measured| over the Q-Q pairs: 0.00200 over 1000 packets, 0.00500 all",
		"    0.01000  0.01200\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestMBMSummaryHTML(t *testing.T) {
	s := summarize(burstFixture(), composeFixture())
	var b bytes.Buffer
	if err := WriteMBMSummaryHTML(&b, &s); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkWellFormed(t, doc)
	checkSelfContained(t, doc)
	n, refs := svgCounts(t, doc)
	// Two box plots (8.5.1 by derate: 3 boxes; 8.1.1: 1 box), the
	// histogram, the Q-Q plot.
	if n["svg"] != 4 || n["g.box"] != 4 || n["line.median"] != 4 {
		t.Errorf("svg %d, boxes %d, medians %d: want 4, 4, 4", n["svg"], n["g.box"], n["line.median"])
	}
	// p0 and p1 across each box plot, p0 below p1 (y grows down).
	if len(refs["p0"]) != 2 || len(refs["p1"]) != 2 || refs["p0"][0] <= refs["p1"][0] {
		t.Errorf("reference lines %v", refs)
	}
	// Bars: 3 FAIL bins and 1 PASS bin.
	if n["rect.bar"] != 4 {
		t.Errorf("%d bars, want 4", n["rect.bar"])
	}
	// Q-Q: 2 filled marks over 1000 packets and 3 hollow ones.
	if n["circle.mark"] != 5 || strings.Count(doc, `class="mark"`) != 5 || strings.Count(doc, `r="3.5" fill="none"`) != 3 {
		t.Errorf("%d marks, %d hollow", n["circle.mark"], strings.Count(doc, `r="3.5" fill="none"`))
	}
	if !strings.Contains(doc, "max |composed − measured| 0.00200") {
		t.Error("the Q-Q caption lacks the max deviation")
	}
	// The derate chart's boxes sit at x = 0.4, 0.8, 1 in order.
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(doc, -1)
	var derateSVG string
	for _, s := range svgs {
		if strings.Contains(s, "loss by derate") {
			derateSVG = s
		}
	}
	xs := regexp.MustCompile(`class="median" x1="([0-9.]+)" x2="([0-9.]+)"`).FindAllStringSubmatch(derateSVG, -1)
	if len(xs) != 3 {
		t.Fatalf("derate chart: %d medians", len(xs))
	}
	var mid []float64
	for _, m := range xs {
		a, _ := strconv.ParseFloat(m[1], 64)
		z, _ := strconv.ParseFloat(m[2], 64)
		mid = append(mid, (a+z)/2)
	}
	// Equal spacing in derate gives spacing in x in the same ratio: 0.4 to
	// 0.8 is twice 0.8 to 1.
	if r := (mid[1] - mid[0]) / (mid[2] - mid[1]); math.Abs(r-2) > 0.05 {
		t.Errorf("box x %v: ratio %g, want 2", mid, r)
	}
}

// TestMBMSummaryEmpty: nothing to draw gives frames saying so.
func TestMBMSummaryEmpty(t *testing.T) {
	s := summarize(nil, nil)
	var b bytes.Buffer
	if err := WriteMBMSummaryHTML(&b, &s); err != nil {
		t.Fatal(err)
	}
	checkWellFormed(t, b.String())
	if !strings.Contains(b.String(), "no data") {
		t.Error("an empty summary's histogram does not say no data")
	}
}

func TestMBMSummaryReport(t *testing.T) {
	s := summarize(burstFixture(), composeFixture())
	raw, _ := json.Marshal(s)
	saved, err := Decode("s.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	var text, want bytes.Buffer
	if err := saved.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	WriteMBMSummaryText(&want, &s)
	if text.String() != want.String() {
		t.Errorf("sonde report's text differs from the summary's")
	}
	var csv bytes.Buffer
	if err := WriteMBMSummaryCSV(&csv, &s); err != nil || strings.Count(csv.String(), "\n") != 5 {
		t.Errorf("CSV: %v, %q", err, csv.String())
	}
}

// FuzzMBMSummary: any saved summary, and any result or composition fed to
// the summarizer, renders as text, CSV and well-formed HTML, never a
// panic.
func FuzzMBMSummary(f *testing.F) {
	s := summarize(burstFixture(), composeFixture())
	raw, _ := json.Marshal(s)
	f.Add(raw)
	r, _ := json.Marshal(burstFixture()[5])
	f.Add(r)
	c, _ := json.Marshal(composeFixture()[0])
	f.Add(c)
	f.Add([]byte(`{"schema":"sonde.mbm-summary/v1","groups":[{"test_id":"<x>","p0":-1,"p1":1e308,"loss":{"n":1,"min":-5,"max":1e300}}],"decide":[{"low":-1,"high":0,"pass":-3}],"compose":{"qq":[{"composed":1e308,"measured":-1e308}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var sum model.MBMSummary
		if json.Unmarshal(b, &sum) == nil {
			renderAll(t, &sum)
		}
		z := NewMBMSummarizer()
		var res model.MBMResult
		if json.Unmarshal(b, &res) == nil && len(res.Tests) <= 64 {
			z.AddResult(&res)
		}
		var comp model.MBMComposition
		if json.Unmarshal(b, &comp) == nil && len(comp.Tests) <= 64 {
			z.AddComposition(&comp)
		}
		sum = z.Summary()
		renderAll(t, &sum)
	})
}

func renderAll(t *testing.T, s *model.MBMSummary) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteMBMSummaryText(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteMBMSummaryCSV(&b, s); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteMBMSummaryHTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := wellFormed(b.String()); err != nil {
		t.Fatal(err)
	}
}
