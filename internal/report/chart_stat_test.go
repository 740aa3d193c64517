package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// attrFloats are the values of attr in every element matching tag.class.
func attrFloats(t *testing.T, svg, tagClass, attr string) []float64 {
	t.Helper()
	tag, class, _ := strings.Cut(tagClass, ".")
	re := regexp.MustCompile(`<` + tag + ` class="` + class + `"[^>]*?\s` + attr + `="([-0-9.]+)"`)
	var out []float64
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestBoxChartLinear: on a linear axis a box spans q1 to q3 in
// proportion, the median inside, and a reference line at its value.
func TestBoxChartLinear(t *testing.T) {
	c := boxChart{Title: "t", XLabel: "x", YLabel: "y",
		Boxes: []boxItem{{Label: "a", Min: 0, Q1: 10, Median: 20, Q3: 30, Max: 40}, {Label: "b", Min: 5, Q1: 5, Median: 5, Q3: 5, Max: 5}},
		Refs:  []refLine{{Y: 20, Label: "twenty", Color: "#f00"}}}
	svg := c.svg()
	n, refs := svgCounts(t, svg)
	if n["g.box"] != 2 || n["line.median"] != 2 || len(refs["twenty"]) != 1 {
		t.Fatalf("counts %v, refs %v", n, refs)
	}
	ys := attrFloats(t, svg, "line.median", "y1")
	if math.Abs(refs["twenty"][0]-ys[0]) > 0.05 {
		t.Errorf("reference at 20 drawn at y %g, the median 20 at %g", refs["twenty"][0], ys[0])
	}
	if !strings.Contains(svg, ">a</text>") || !strings.Contains(svg, ">b</text>") {
		t.Error("category labels missing")
	}
	// The box of a: from q3 (y) down to q1, height 20 of the 0–40 axis
	// (half the plot).
	hs := regexp.MustCompile(`<rect x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="([0-9.]+)" fill="#dce6f0"`).FindAllStringSubmatch(svg, -1)
	if len(hs) != 2 {
		t.Fatalf("%d boxes drawn", len(hs))
	}
	if h, _ := strconv.ParseFloat(hs[0][1], 64); math.Abs(h-chartPlotH/2) > 0.2 {
		t.Errorf("box height %g, want %d", h, chartPlotH/2)
	}
}

// TestBoxChartLogZero: on a log axis a zero is drawn at the bottom,
// labelled 0, a decade below the least positive figure.
func TestBoxChartLogZero(t *testing.T) {
	c := boxChart{Title: "t", LogY: true, Numeric: true,
		Boxes: []boxItem{{X: 0.5, Min: 0, Q1: 0, Median: 0, Q3: 0, Max: 0}, {X: 1, Min: 0.02, Q1: 0.02, Median: 0.03, Q3: 0.04, Max: 0.05}}}
	svg := c.svg()
	ys := attrFloats(t, svg, "line.median", "y1")
	if len(ys) != 2 || math.Abs(ys[0]-(marginT+chartPlotH)) > 0.05 {
		t.Fatalf("zero's median at %v, want the bottom %d", ys, marginT+chartPlotH)
	}
	// Decades 0.001 (the zeros'), 0.01, 0.1: the bottom tick says 0.
	if !strings.Contains(svg, `text-anchor="end">0</text>`) || !strings.Contains(svg, `>0.01</text>`) || strings.Contains(svg, `>0.001</text>`) {
		t.Errorf("log axis labels: %s", svg)
	}
}

func TestBarChart(t *testing.T) {
	c := barChart{Title: "h", Bins: []string{"1–1", "2–3", "4–7"},
		Stacks: []barStack{{Name: "PASS", Counts: []float64{1, 0, 2}}, {Name: "FAIL", Counts: []float64{3, 0}}}}
	svg := c.svg()
	n, _ := svgCounts(t, svg)
	if n["rect.bar"] != 3 { // 1 + 3 in the first bin, 2 in the third
		t.Fatalf("%d bars, want 3", n["rect.bar"])
	}
	h := attrFloats(t, svg, "rect.bar", "height")
	// Stacked to 4 on a 0–4 axis: the first bin fills the plot.
	if math.Abs(h[0]+h[1]-chartPlotH) > 0.2 || math.Abs(h[1]-3*h[0]) > 0.2 {
		t.Errorf("heights %v", h)
	}
	if empty := (barChart{Title: "e"}).svg(); !strings.Contains(empty, "no data") {
		t.Error("an empty histogram does not say so")
	}
}
