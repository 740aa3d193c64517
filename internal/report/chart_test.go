package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func tickLabels(ts []tick) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.label)
	}
	return strings.Join(s, " ")
}

func TestTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   string
	}{
		{0, 100, "0 20 40 60 80 100"},
		{0, 0.35, "0.0 0.1 0.2 0.3"},
		{1, 11, "2 4 6 8 10"},
		{-10, 10, "-10 -5 0 5 10"},
		{0, 2000, "0 500 1000 1500 2000"},
		{0.02, 0.03, "0.020 0.022 0.024 0.026 0.028 0.030"},
	}
	for _, tc := range tests {
		if got := tickLabels(ticks(tc.lo, tc.hi)); got != tc.want {
			t.Errorf("ticks(%g, %g) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	lo, hi := niceRange(1.1, 94.9)
	if lo != 0 || hi != 100 {
		t.Errorf("niceRange(1.1, 94.9) = %g, %g; want 0, 100", lo, hi)
	}
	if got := tickLabels(logTicks(10, 1000)); got != "10 20 50 100 200 500 1000" {
		t.Errorf("logTicks(10, 1000) = %q", got)
	}
	if got := tickLabels(logTicks(0.01, 1000)); got != "0.01 0.1 1 10 100 1000" {
		t.Errorf("logTicks(0.01, 1000) = %q", got)
	}
}

func TestDecimateKeepsExtremes(t *testing.T) {
	pts := make([]point, 10000)
	for i := range pts {
		pts[i] = point{X: float64(i), Y: math.Sin(float64(i) / 50)}
	}
	pts[1234].Y = 9  // a spike
	pts[7777].Y = -9 // a dip
	got := decimate(pts, 800)
	if len(got) > 800 {
		t.Fatalf("decimate kept %d points, limit 800", len(got))
	}
	var hasMax, hasMin bool
	for i, p := range got {
		hasMax = hasMax || p.Y == 9
		hasMin = hasMin || p.Y == -9
		if i > 0 && p.X <= got[i-1].X {
			t.Fatalf("points out of order at %d: %v after %v", i, p, got[i-1])
		}
	}
	if !hasMax || !hasMin {
		t.Errorf("decimate lost the extremes: max %v, min %v", hasMax, hasMin)
	}
	if short := decimate(pts[:50], 800); len(short) != 50 {
		t.Errorf("short series changed: %d points", len(short))
	}
}

var coordRe = regexp.MustCompile(`points="([^"]*)"`)

// checkPolylines asserts every polyline vertex lies inside the viewBox.
func checkPolylines(t *testing.T, svg string) int {
	t.Helper()
	vb := regexp.MustCompile(`viewBox="0 0 (\d+) (\d+)"`).FindStringSubmatch(svg)
	if vb == nil {
		t.Fatalf("no viewBox in %.200s", svg)
	}
	w, _ := strconv.ParseFloat(vb[1], 64)
	h, _ := strconv.ParseFloat(vb[2], 64)
	n := 0
	for _, m := range coordRe.FindAllStringSubmatch(svg, -1) {
		for _, xy := range strings.Fields(m[1]) {
			x, errx := strconv.ParseFloat(strings.Split(xy, ",")[0], 64)
			y, erry := strconv.ParseFloat(strings.Split(xy, ",")[1], 64)
			if errx != nil || erry != nil || x < 0 || x > w || y < 0 || y > h {
				t.Fatalf("vertex %q outside viewBox %gx%g", xy, w, h)
			}
			n++
		}
	}
	return n
}

func TestChartSVG(t *testing.T) {
	c := lineChart{Title: "t <x>", XLabel: "time (s)", YLabel: "rate", YZero: true,
		Series: []series{
			{Name: "a & b", Points: []point{{0, 1}, {1, math.NaN()}, {2, 3}, {3, math.Inf(1)}, {4, 2}}},
			{Name: "single", Points: []point{{2, 2}}},
			{Name: "empty"},
		},
		Refs:  []refLine{{Y: 2.5, Label: "ref", Color: "#888"}, {Y: math.NaN(), Label: "bad"}},
		Bands: []band{{X0: 1, X1: 3, Label: "steady"}, {X0: 5, X1: 1}},
	}
	svg := c.svg()
	if n := checkPolylines(t, svg); n != 3 {
		t.Errorf("polyline has %d vertices, want 3 (NaN and Inf dropped)", n)
	}
	for _, want := range []string{"a &amp; b", "t &lt;x&gt;", ">ref<", "<circle", ">steady<", ">time (s)<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	for _, bad := range []string{"NaN", "Inf", ">bad<", "a & b"} {
		if strings.Contains(svg, bad) {
			t.Errorf("svg contains %q", bad)
		}
	}
	checkWellFormed(t, svg)

	empty := lineChart{Title: "nothing", Series: []series{{Name: "x", Points: []point{{math.NaN(), 1}}}}}.svg()
	if !strings.Contains(empty, "no data") {
		t.Errorf("empty chart does not say so: %s", empty)
	}
	checkWellFormed(t, empty)

	flat := lineChart{Title: "flat", Series: []series{{Points: []point{{1, 5}, {1, 5}}}}}.svg()
	if n := checkPolylines(t, flat); n != 2 {
		t.Errorf("flat chart: %d vertices", n)
	}
	logc := lineChart{Title: "log", LogX: true, Series: []series{{Points: []point{{-1, 0}, {0, 0}, {20, 0}, {400, 1}}}}}.svg()
	if n := checkPolylines(t, logc); n != 2 {
		t.Errorf("log chart kept %d vertices, want 2 (x <= 0 dropped)", n)
	}
}
