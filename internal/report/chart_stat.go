package report

import (
	"math"
	"strconv"
	"strings"
)

// Statistical charts beside lineChart, on its scales, ticks, axes, legend
// and escaping: box plots (boxChart), histograms as stacked bars
// (barChart), and marks for scatter plots (writeMarks, drawn through
// lineChart.svgWith).

// boxItem is one box of a box plot: a sample's min, quartiles and max at
// X.
type boxItem struct {
	X                        float64 // position in data units (numeric axes); categorical charts number the boxes
	Label                    string  // its tick label on a categorical axis
	Title                    string  // tooltip
	Min, Q1, Median, Q3, Max float64
	// Refs are short horizontal lines across this box's slot only (e.g.
	// thresholds that differ between boxes).
	Refs []refLine
}

// boxChart is a box plot: a box from q1 to q3 with a line at the median,
// whiskers from min to max.
type boxChart struct {
	Title, XLabel, YLabel string
	Boxes                 []boxItem
	Refs                  []refLine // across the whole plot
	// Keys are legend entries (Label, Color) for the boxes' own Refs.
	Keys []refLine
	// Numeric places each box at its X on a value axis (e.g. a derate);
	// otherwise the boxes are numbered 1… and labelled with Label.
	Numeric bool
	// LogY draws y on a log axis; values ≤ 0 are drawn at its bottom, a
	// decade below the least positive one, labelled 0.
	LogY bool
}

const (
	maxBoxes    = 200 // boxes drawn; more are left out (the caller's table has them all)
	maxBars     = 64  // histogram bins drawn
	maxBoxHalfW = 16.0
)

// svg renders the box plot; without boxes it draws an empty frame.
func (c boxChart) svg() string {
	boxes := c.Boxes
	if len(boxes) > maxBoxes {
		boxes = boxes[:maxBoxes]
	}
	var legend []legendItem
	if len(boxes) > 0 {
		legend = append(legend, legendItem{name: "median, q1–q3 box, min–max whiskers", color: palette[0], width: 2})
	}
	for _, r := range c.Refs {
		if r.Label != "" && finite(r.Y) {
			legend = append(legend, legendItem{name: r.Label, color: r.Color, dash: true, width: 1.2})
		}
	}
	for _, r := range c.Keys {
		legend = append(legend, legendItem{name: r.Label, color: r.Color, dash: true, width: 1.2})
	}
	rows := layoutLegend(legend)
	var b strings.Builder
	x0, y0, plotW := writeFrame(&b, c.Title, len(rows))
	ylo, yhi, ok := c.yRange(boxes)
	if !ok {
		return noData(&b, x0, y0, plotW)
	}
	ys := scale{lo: ylo, hi: yhi, a: y0 + chartPlotH, b: y0, log: c.LogY}
	xs, xt := c.xAxis(boxes, x0, plotW)
	yt := ticks(ylo, yhi)
	if c.LogY {
		yt = logTicks(ylo, yhi)
		if c.hasNonPositive(boxes) && len(yt) > 0 && yt[0].v <= ylo {
			yt[0].label = "0"
		}
	}
	writeGridAxes(&b, xs, ys, xt, yt, c.XLabel, c.YLabel)
	at := func(v float64) float64 { // y of a value, clamped into the plot
		if !finite(v) || (c.LogY && v <= ylo) {
			v = ylo
		}
		return ys.at(math.Min(math.Max(v, ylo), yhi))
	}
	for _, r := range c.Refs {
		if finite(r.Y) && r.Y >= ylo && r.Y <= yhi {
			writeHLine(&b, xs.a, xs.b, at(r.Y), r)
		}
	}
	pos := make([]float64, len(boxes))
	for i, bx := range boxes {
		pos[i] = xs.at(c.boxX(i, bx))
	}
	hw := boxHalfWidth(pos, plotW)
	for i, bx := range boxes {
		x := pos[i]
		for _, r := range bx.Refs {
			if finite(r.Y) && r.Y >= ylo && r.Y <= yhi {
				writeHLine(&b, x-1.6*hw, x+1.6*hw, at(r.Y), r)
			}
		}
		col := palette[0]
		b.WriteString(`<g class="box"><title>` + esc(bx.Title) + `</title>`)
		b.WriteString(`<line x1="` + f1(x) + `" x2="` + f1(x) + `" y1="` + f1(at(bx.Min)) + `" y2="` + f1(at(bx.Max)) +
			`" stroke="` + col + `" stroke-width="1.2"/>`)
		for _, v := range []float64{bx.Min, bx.Max} {
			y := f1(at(v))
			b.WriteString(`<line x1="` + f1(x-hw/2) + `" x2="` + f1(x+hw/2) + `" y1="` + y + `" y2="` + y + `" stroke="` + col + `" stroke-width="1.2"/>`)
		}
		top, bot := at(bx.Q3), at(bx.Q1)
		b.WriteString(`<rect x="` + f1(x-hw) + `" y="` + f1(top) + `" width="` + f1(2*hw) + `" height="` + f1(math.Max(bot-top, 0)) +
			`" fill="#dce6f0" stroke="` + col + `" stroke-width="1.2"/>`)
		y := f1(at(bx.Median))
		b.WriteString(`<line class="median" x1="` + f1(x-hw) + `" x2="` + f1(x+hw) + `" y1="` + y + `" y2="` + y + `" stroke="` + col + `" stroke-width="2.5"/></g>`)
	}
	writeLegend(&b, rows, marginT+chartPlotH+marginB+2)
	b.WriteString(`</svg>`)
	return b.String()
}

// boxX is box i's position in data units.
func (c boxChart) boxX(i int, bx boxItem) float64 {
	if c.Numeric {
		return bx.X
	}
	return float64(i + 1)
}

// xAxis is the box plot's x scale and ticks: values on a numeric axis,
// the boxes' labels on a categorical one.
func (c boxChart) xAxis(boxes []boxItem, x0, plotW float64) (scale, []tick) {
	if !c.Numeric {
		xs := scale{lo: 0.5, hi: float64(len(boxes)) + 0.5, a: x0, b: x0 + plotW}
		return xs, categoryTicks(len(boxes), func(i int) string { return boxes[i].Label }, plotW)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, bx := range boxes {
		if finite(bx.X) {
			lo, hi = math.Min(lo, bx.X), math.Max(hi, bx.X)
		}
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	lo, hi = widen(lo, hi)
	pad := (hi - lo) * 0.08 // room for the outermost boxes
	lo, hi = niceRange(lo-pad, hi+pad)
	return scale{lo: lo, hi: hi, a: x0, b: x0 + plotW}, ticks(lo, hi)
}

// yRange is the value range: every figure and reference, with zero on a
// linear axis; on a log axis the decades around the positive ones.
func (c boxChart) yRange(boxes []boxItem) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	add := func(v float64) {
		if finite(v) && (!c.LogY || v > 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, bx := range boxes {
		for _, v := range []float64{bx.Min, bx.Q1, bx.Median, bx.Q3, bx.Max} {
			add(v)
		}
		for _, r := range bx.Refs {
			add(r.Y)
		}
	}
	if len(boxes) == 0 {
		return 0, 0, false
	}
	for _, r := range c.Refs {
		add(r.Y)
	}
	if c.LogY {
		if lo > hi { // nothing positive: an empty decade range
			return 1e-4, 1, true
		}
		lo = math.Pow(10, math.Floor(math.Log10(lo)))
		if c.hasNonPositive(boxes) {
			lo /= 10 // the zeros' own decade, below every positive value
		}
		hi = math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
		return lo, hi, true
	}
	if lo > hi {
		lo, hi = 0, 1
	}
	lo, hi = widen(math.Min(lo, 0), math.Max(hi, 0))
	lo, hi = niceRange(lo, hi)
	return lo, hi, true
}

// hasNonPositive tells whether a box has a figure ≤ 0 (drawn at the
// bottom of a log axis).
func (c boxChart) hasNonPositive(boxes []boxItem) bool {
	for _, bx := range boxes {
		if bx.Min <= 0 {
			return true
		}
	}
	return false
}

// boxHalfWidth is half a box's width: a third of the closest spacing of
// two boxes (at positions pos, at most maxBoxes), at most maxBoxHalfW.
func boxHalfWidth(pos []float64, plotW float64) float64 {
	gap := plotW
	for i := range pos {
		for j := range i {
			if d := math.Abs(pos[i] - pos[j]); d > 0.5 && d < gap {
				gap = d
			}
		}
	}
	return math.Max(2, math.Min(maxBoxHalfW, gap/3))
}

// barStack is one series of a stacked bar chart: a count per bin.
type barStack struct {
	Name   string
	Color  string
	Counts []float64
}

// barChart is a histogram: one bar per bin, its stacks piled in order.
type barChart struct {
	Title, XLabel, YLabel string
	Bins                  []string // the bins' labels
	Stacks                []barStack
}

// svg renders the histogram; without bins it draws an empty frame.
func (c barChart) svg() string {
	bins := c.Bins
	if len(bins) > maxBars {
		bins = bins[:maxBars]
	}
	var legend []legendItem
	for i, s := range c.Stacks {
		legend = append(legend, legendItem{name: s.Name, color: stackColor(i, s), width: 8})
	}
	rows := layoutLegend(legend)
	var b strings.Builder
	x0, y0, plotW := writeFrame(&b, c.Title, len(rows))
	if len(bins) == 0 {
		return noData(&b, x0, y0, plotW)
	}
	total := make([]float64, len(bins))
	for _, s := range c.Stacks {
		for i := range bins {
			if i < len(s.Counts) && finite(s.Counts[i]) && s.Counts[i] > 0 {
				total[i] += s.Counts[i]
			}
		}
	}
	top := 1.0
	for _, t := range total {
		top = math.Max(top, t)
	}
	_, yhi := niceRange(0, top)
	ys := scale{lo: 0, hi: yhi, a: y0 + chartPlotH, b: y0}
	xs := scale{lo: 0.5, hi: float64(len(bins)) + 0.5, a: x0, b: x0 + plotW}
	writeGridAxes(&b, xs, ys, categoryTicks(len(bins), func(i int) string { return bins[i] }, plotW), ticks(0, yhi), c.XLabel, c.YLabel)
	w := plotW / float64(len(bins)) * 0.8
	for i := range bins {
		base := 0.0
		x := xs.at(float64(i+1)) - w/2
		for k, s := range c.Stacks {
			if i >= len(s.Counts) || !finite(s.Counts[i]) || s.Counts[i] <= 0 {
				continue
			}
			v := s.Counts[i]
			yTop, yBot := ys.at(base+v), ys.at(base)
			b.WriteString(`<rect class="bar" x="` + f1(x) + `" y="` + f1(yTop) + `" width="` + f1(w) + `" height="` + f1(yBot-yTop) +
				`" fill="` + esc(stackColor(k, s)) + `"><title>` + esc(s.Name+" "+bins[i]+": "+strconv.FormatFloat(v, 'f', -1, 64)) + `</title></rect>`)
			base += v
		}
	}
	writeLegend(&b, rows, marginT+chartPlotH+marginB+2)
	b.WriteString(`</svg>`)
	return b.String()
}

func stackColor(i int, s barStack) string {
	if s.Color != "" {
		return s.Color
	}
	return palette[i%len(palette)]
}

// categoryTicks labels n slots numbered 1…n, every one or, where the
// widest label does not fit its slot, every step-th.
func categoryTicks(n int, label func(int) string, plotW float64) []tick {
	widest := 0
	for i := range min(n, maxBoxes) {
		widest = max(widest, len([]rune(label(i))))
	}
	need := 7*float64(widest) + 10 // 12-unit glyphs are about 7 wide
	step := 1
	if per := plotW / float64(max(n, 1)); per < need {
		step = int(math.Ceil(need / per))
	}
	var out []tick
	for i := 0; i < n && len(out) < maxTicks; i += step {
		out = append(out, tick{v: float64(i + 1), label: label(i)})
	}
	return out
}

// writeMarks draws points as circles (hollow: outlined only), e.g. a
// scatter plot's series through lineChart.svgWith.
func writeMarks(b *strings.Builder, pts []point, xs, ys scale, color string, hollow bool, title string) {
	fill := esc(color)
	if hollow {
		fill = "none"
	}
	for _, p := range pts {
		if !finite(p.X) || !finite(p.Y) {
			continue
		}
		b.WriteString(`<circle class="mark" cx="` + f1(xs.at(p.X)) + `" cy="` + f1(ys.at(p.Y)) + `" r="3.5" fill="` + fill +
			`" stroke="` + esc(color) + `" stroke-width="1.2"><title>` + esc(title) + `</title></circle>`)
	}
}

// writeFrame opens a chart's SVG, with room for legend rows under the
// plot, and draws the plot's frame; it returns the plot's corner and
// width.
func writeFrame(b *strings.Builder, title string, legendRows int) (x0, y0, plotW float64) {
	h := marginT + chartPlotH + marginB + legendRows*legendRowH + 4
	b.WriteString(`<svg class="chart" viewBox="0 0 ` + itoa(chartW) + " " + itoa(h) +
		`" role="img" aria-label="` + esc(title) + `" font-size="` + itoa(fontSize) + `">`)
	b.WriteString(`<title>` + esc(title) + `</title>`)
	plotW = float64(chartW - marginL - marginR)
	x0, y0 = float64(marginL), float64(marginT)
	b.WriteString(`<rect x="` + f1(x0) + `" y="` + f1(y0) + `" width="` + f1(plotW) + `" height="` +
		itoa(chartPlotH) + `" fill="#fff" stroke="#bbb"/>`)
	return x0, y0, plotW
}

// noData closes a chart that has nothing to draw.
func noData(b *strings.Builder, x0, y0, plotW float64) string {
	b.WriteString(`<text x="` + f1(x0+plotW/2) + `" y="` + f1(y0+chartPlotH/2) +
		`" text-anchor="middle" fill="#888">no data</text></svg>`)
	return b.String()
}

// writeHLine draws a dashed horizontal reference from x1 to x2 at y.
func writeHLine(b *strings.Builder, x1, x2, y float64, r refLine) {
	b.WriteString(`<line class="ref" x1="` + f1(x1) + `" x2="` + f1(x2) + `" y1="` + f1(y) + `" y2="` + f1(y) +
		`" stroke="` + esc(r.Color) + `" stroke-width="1.2" stroke-dasharray="5 3"><title>` + esc(r.Label) + `</title></line>`)
}
