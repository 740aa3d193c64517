package report

import (
	"html"
	"math"
	"strconv"
	"strings"
)

// point is one (x, y) datum of a series, in data units.
type point struct{ X, Y float64 }

// series is one line of a chart.
type series struct {
	Name   string
	Points []point
	Color  string  // empty: taken from the palette
	Width  float64 // stroke width; 0 means 1.5
	Dash   bool
}

// refLine is a horizontal reference, e.g. the idle RTT.
type refLine struct {
	Y     float64
	Label string
	Color string
}

// band shades an x range, e.g. the RFC 6349 steady-state window.
type band struct {
	X0, X1 float64
	Label  string
}

// lineChart is a multi-series line chart rendered as inline SVG. The SVG has
// a viewBox and no fixed size, so CSS scales it to its container.
type lineChart struct {
	Title  string // accessible name
	XLabel string
	YLabel string
	Series []series
	Refs   []refLine
	Bands  []band
	YZero  bool // include y = 0
	LogX   bool // logarithmic x axis (positive x only)
}

// Chart geometry in viewBox units. Text is 12 units on wide screens; the
// page's CSS raises it to 16 on phones, where the chart shrinks to ~330 px,
// so margins and the legend layout leave room for the larger size.
const (
	chartW      = 480
	chartPlotH  = 210
	marginL     = 58
	marginR     = 22
	marginT     = 12
	marginB     = 44
	legendRowH  = 20
	maxPoints   = 800 // per series, after min/max decimation
	fontSize    = 12
	charWidth   = 8.8 // average glyph advance at 16 units, for legend layout
	maxTicks    = 40  // bound on tick loops
	defaultLine = 1.5
)

// palette is Tableau 10: distinct hues that survive greyscale printing.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// svg renders the chart. It never fails: without data it draws an empty
// frame saying so.
func (c lineChart) svg() string { return c.svgWith(nil, nil) }

// svgWith renders the chart, leaving the series named in custom to draw,
// which paints them (e.g. as marks, not lines) after the axes.
func (c lineChart) svgWith(draw func(b *strings.Builder, xs, ys scale), custom map[string]bool) string {
	ser := c.cleanSeries()
	xlo, xhi, ylo, yhi, ok := c.bounds(ser)
	legend := c.legendItems(ser)
	rows := layoutLegend(legend)
	var b strings.Builder
	x0, y0, plotW := writeFrame(&b, c.Title, len(rows))
	if !ok {
		return noData(&b, x0, y0, plotW)
	}
	xs := scale{lo: xlo, hi: xhi, a: x0, b: x0 + plotW, log: c.LogX}
	ys := scale{lo: ylo, hi: yhi, a: y0 + chartPlotH, b: y0}

	for _, bd := range c.Bands {
		l, r := math.Max(bd.X0, xlo), math.Min(bd.X1, xhi)
		if !finite(l) || !finite(r) || r <= l {
			continue
		}
		b.WriteString(`<rect x="` + f1(xs.at(l)) + `" y="` + f1(y0) + `" width="` + f1(xs.at(r)-xs.at(l)) +
			`" height="` + itoa(chartPlotH) + `" fill="#f2f2f2"><title>` + esc(bd.Label) + `</title></rect>`)
		b.WriteString(`<text x="` + f1(xs.at(l)+3) + `" y="` + f1(y0+chartPlotH-4) + `" fill="#999" font-size="9">` +
			esc(bd.Label) + `</text>`)
	}
	c.writeAxes(&b, xs, ys)
	for _, rl := range c.Refs {
		if !finite(rl.Y) || rl.Y < ylo || rl.Y > yhi {
			continue
		}
		y := f1(ys.at(rl.Y))
		b.WriteString(`<line x1="` + f1(x0) + `" x2="` + f1(x0+plotW) + `" y1="` + y + `" y2="` + y +
			`" stroke="` + esc(rl.Color) + `" stroke-width="1.2" stroke-dasharray="5 3"><title>` +
			esc(rl.Label) + `</title></line>`)
	}
	for _, s := range ser {
		if !custom[s.Name] {
			writeSeries(&b, s, xs, ys)
		}
	}
	if draw != nil {
		draw(&b, xs, ys)
	}
	writeLegend(&b, rows, marginT+chartPlotH+marginB+2)
	b.WriteString(`</svg>`)
	return b.String()
}

// cleanSeries drops non-finite points (and non-positive x on a log axis),
// assigns palette colours, and thins long series.
func (c lineChart) cleanSeries() []series {
	var out []series
	for i, s := range c.Series {
		var pts []point
		for _, p := range s.Points {
			if finite(p.X) && finite(p.Y) && (!c.LogX || p.X > 0) {
				pts = append(pts, p)
			}
		}
		if s.Color == "" {
			s.Color = palette[i%len(palette)]
		}
		if s.Width <= 0 {
			s.Width = defaultLine
		}
		s.Points = decimate(pts, maxPoints)
		out = append(out, s)
	}
	return out
}

// bounds finds the nice data ranges; ok is false when there is nothing to draw.
func (c lineChart) bounds(ser []series) (xlo, xhi, ylo, yhi float64, ok bool) {
	xlo, ylo = math.Inf(1), math.Inf(1)
	xhi, yhi = math.Inf(-1), math.Inf(-1)
	for _, s := range ser {
		for _, p := range s.Points {
			xlo, xhi = math.Min(xlo, p.X), math.Max(xhi, p.X)
			ylo, yhi = math.Min(ylo, p.Y), math.Max(yhi, p.Y)
			ok = true
		}
	}
	if !ok {
		return 0, 0, 0, 0, false
	}
	for _, r := range c.Refs {
		if finite(r.Y) {
			ylo, yhi = math.Min(ylo, r.Y), math.Max(yhi, r.Y)
		}
	}
	if c.YZero {
		ylo = math.Min(ylo, 0)
		yhi = math.Max(yhi, 0)
	}
	ylo, yhi = widen(ylo, yhi)
	ylo, yhi = niceRange(ylo, yhi)
	if c.LogX {
		if xhi <= xlo {
			xlo, xhi = xlo/2, xhi*2
		}
		xlo = math.Pow(10, math.Floor(math.Log10(xlo)))
		xhi = math.Pow(10, math.Ceil(math.Log10(xhi)))
		return xlo, xhi, ylo, yhi, true
	}
	xlo, xhi = widen(xlo, xhi)
	xlo, xhi = niceRange(xlo, xhi)
	return xlo, xhi, ylo, yhi, true
}

// widen gives a degenerate range some extent.
func widen(lo, hi float64) (float64, float64) {
	if hi > lo {
		return lo, hi
	}
	d := math.Abs(lo) * 0.1
	if d == 0 {
		d = 1
	}
	return lo - d, hi + d
}

// scale maps data to viewBox coordinates.
type scale struct {
	lo, hi, a, b float64
	log          bool
}

func (s scale) at(v float64) float64 {
	if s.log {
		return s.a + (math.Log10(v)-math.Log10(s.lo))/(math.Log10(s.hi)-math.Log10(s.lo))*(s.b-s.a)
	}
	return s.a + (v-s.lo)/(s.hi-s.lo)*(s.b-s.a)
}

func (c lineChart) writeAxes(b *strings.Builder, xs, ys scale) {
	xt := ticks(xs.lo, xs.hi)
	if c.LogX {
		xt = logTicks(xs.lo, xs.hi)
	}
	writeGridAxes(b, xs, ys, xt, ticks(ys.lo, ys.hi), c.XLabel, c.YLabel)
}

// writeGridAxes draws the grid lines and labels of the ticks xt and yt and
// the axis titles: every chart's axes.
func writeGridAxes(b *strings.Builder, xs, ys scale, xt, yt []tick, xLabel, yLabel string) {
	b.WriteString(`<g stroke="#e3e3e3" stroke-width="1">`)
	for _, t := range yt {
		y := f1(ys.at(t.v))
		b.WriteString(`<line x1="` + f1(xs.a) + `" x2="` + f1(xs.b) + `" y1="` + y + `" y2="` + y + `"/>`)
	}
	for _, t := range xt {
		x := f1(xs.at(t.v))
		b.WriteString(`<line x1="` + x + `" x2="` + x + `" y1="` + f1(ys.a) + `" y2="` + f1(ys.b) + `"/>`)
	}
	b.WriteString(`</g><g fill="#555">`)
	for _, t := range yt {
		b.WriteString(`<text x="` + f1(xs.a-4) + `" y="` + f1(ys.at(t.v)+4) + `" text-anchor="end">` +
			esc(t.label) + `</text>`)
	}
	for _, t := range xt {
		b.WriteString(`<text x="` + f1(xs.at(t.v)) + `" y="` + f1(ys.a+16) + `" text-anchor="middle">` +
			esc(t.label) + `</text>`)
	}
	b.WriteString(`<text x="` + f1((xs.a+xs.b)/2) + `" y="` + f1(ys.a+36) + `" text-anchor="middle">` +
		esc(xLabel) + `</text>`)
	midY := (ys.a + ys.b) / 2
	b.WriteString(`<text x="14" y="` + f1(midY) + `" text-anchor="middle" transform="rotate(-90 14 ` +
		f1(midY) + `)">` + esc(yLabel) + `</text></g>`)
}

func writeSeries(b *strings.Builder, s series, xs, ys scale) {
	if len(s.Points) == 0 {
		return
	}
	dash := ""
	if s.Dash {
		dash = ` stroke-dasharray="6 3"`
	}
	if len(s.Points) == 1 {
		p := s.Points[0]
		b.WriteString(`<circle cx="` + f1(xs.at(p.X)) + `" cy="` + f1(ys.at(p.Y)) + `" r="2.5" fill="` +
			esc(s.Color) + `"><title>` + esc(s.Name) + `</title></circle>`)
		return
	}
	b.WriteString(`<polyline fill="none" stroke="` + esc(s.Color) + `" stroke-width="` + f1(s.Width) +
		`" stroke-linejoin="round"` + dash + ` points="`)
	for i, p := range s.Points {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f1(xs.at(p.X)) + "," + f1(ys.at(p.Y)))
	}
	b.WriteString(`"><title>` + esc(s.Name) + `</title></polyline>`)
}

// legendItem is one swatch and name.
type legendItem struct {
	name, color string
	dash        bool
	width       float64
	x           float64 // position within its row, set by layoutLegend
}

func (c lineChart) legendItems(ser []series) []legendItem {
	var items []legendItem
	for _, s := range ser {
		if s.Name != "" {
			items = append(items, legendItem{name: s.Name, color: s.Color, dash: s.Dash, width: s.Width})
		}
	}
	for _, r := range c.Refs {
		if r.Label != "" && finite(r.Y) {
			items = append(items, legendItem{name: r.Label, color: r.Color, dash: true, width: 1.2})
		}
	}
	return items
}

// layoutLegend flows the items into rows that fit the chart width.
func layoutLegend(items []legendItem) [][]legendItem {
	var rows [][]legendItem
	var cur []legendItem
	x := float64(marginL)
	for _, it := range items {
		w := 24 + charWidth*float64(len([]rune(it.name))) + 12
		if len(cur) > 0 && x+w > chartW-marginR {
			rows = append(rows, cur)
			cur, x = nil, marginL
		}
		it.x = x
		cur = append(cur, it)
		x += w
	}
	if len(cur) > 0 {
		rows = append(rows, cur)
	}
	return rows
}

func writeLegend(b *strings.Builder, rows [][]legendItem, top int) {
	for r, row := range rows {
		y := float64(top + r*legendRowH + legendRowH/2)
		for _, it := range row {
			dash := ""
			if it.dash {
				dash = ` stroke-dasharray="4 2"`
			}
			b.WriteString(`<line x1="` + f1(it.x) + `" x2="` + f1(it.x+18) + `" y1="` + f1(y) + `" y2="` + f1(y) +
				`" stroke="` + esc(it.color) + `" stroke-width="` + f1(math.Max(it.width, 2)) + `"` + dash + `/>`)
			b.WriteString(`<text x="` + f1(it.x+22) + `" y="` + f1(y+5) + `" fill="#333">` + esc(it.name) + `</text>`)
		}
	}
}

// tick is one axis mark.
type tick struct {
	v     float64
	label string
}

// niceNum rounds x to 1, 2 or 5 times a power of ten (Heckbert, Graphics
// Gems 1990), rounding to nearest or up.
func niceNum(x float64, round bool) float64 {
	if x <= 0 || !finite(x) {
		return 1
	}
	exp := math.Floor(math.Log10(x))
	f := x / math.Pow(10, exp)
	var nf float64
	if round {
		switch {
		case f < 1.5:
			nf = 1
		case f < 3:
			nf = 2
		case f < 7:
			nf = 5
		default:
			nf = 10
		}
	} else {
		switch {
		case f <= 1:
			nf = 1
		case f <= 2:
			nf = 2
		case f <= 5:
			nf = 5
		default:
			nf = 10
		}
	}
	return nf * math.Pow(10, exp)
}

// tickStep is the spacing for about five ticks over [lo, hi].
func tickStep(lo, hi float64) float64 {
	return niceNum(niceNum(hi-lo, false)/4, true)
}

// niceRange widens [lo, hi] to multiples of the tick step.
func niceRange(lo, hi float64) (float64, float64) {
	st := tickStep(lo, hi)
	return math.Floor(lo/st) * st, math.Ceil(hi/st) * st
}

// ticks places nicely spaced, nicely labelled ticks on [lo, hi].
func ticks(lo, hi float64) []tick {
	st := tickStep(lo, hi)
	dec := 0
	if st < 1 {
		dec = min(int(math.Ceil(-math.Log10(st)-1e-9)), 9)
	}
	var out []tick
	start := math.Ceil(lo/st-1e-9) * st
	for i := 0; i < maxTicks; i++ {
		v := start + float64(i)*st
		if v > hi+st*1e-6 {
			break
		}
		if math.Abs(v) < st*1e-9 {
			v = 0 // no "-0"
		}
		out = append(out, tick{v: v, label: strconv.FormatFloat(v, 'f', dec, 64)})
	}
	return out
}

// logTicks marks 1, 2 and 5 times each power of ten on short ranges and
// only the powers of ten on long ones.
func logTicks(lo, hi float64) []tick {
	decades := math.Log10(hi) - math.Log10(lo)
	mult := []float64{1, 2, 5}
	if decades > 3 {
		mult = []float64{1}
	}
	var out []tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)) && len(out) < maxTicks; e++ {
		for _, m := range mult {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			dec := 0
			if e < 0 {
				dec = int(-e)
			}
			out = append(out, tick{v: v, label: strconv.FormatFloat(v, 'f', dec, 64)})
		}
	}
	return out
}

// decimate keeps at most limit points, preserving each bucket's minimum and
// maximum in time order so that peaks stay visible.
func decimate(pts []point, limit int) []point {
	if len(pts) <= limit || limit < 4 {
		return pts
	}
	buckets := limit / 2
	out := make([]point, 0, limit)
	for i := 0; i < buckets; i++ {
		a, z := i*len(pts)/buckets, (i+1)*len(pts)/buckets
		if a >= z {
			continue
		}
		lo, hi := a, a
		for j := a; j < z; j++ {
			if pts[j].Y < pts[lo].Y {
				lo = j
			}
			if pts[j].Y > pts[hi].Y {
				hi = j
			}
		}
		if lo > hi {
			lo, hi = hi, lo
		}
		out = append(out, pts[lo])
		if hi != lo {
			out = append(out, pts[hi])
		}
	}
	return out
}

func esc(s string) string { return html.EscapeString(s) }

func itoa(i int) string { return strconv.Itoa(i) }

func f1(v float64) string {
	if !finite(v) {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
