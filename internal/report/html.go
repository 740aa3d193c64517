package report

import (
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// figure is one chart with its caption.
type figure struct {
	Caption string
	SVG     template.HTML // built by lineChart.svg, which escapes all text
}

// card is one headline figure at the top of the HTML report.
type card struct {
	Label, Value, Sub, Level string
}

type htmlDirection struct {
	directionView
	Charts []figure
}

type htmlPage struct {
	Kind       string
	Title      string
	Subtitle   string
	Cards      []card
	Header     []row
	Grades     []row
	Baseline   []row
	Directions []htmlDirection
	CDF        *figure
	ClassesDur string
	Classes    []classRow
	Notes      []string
	Errors     []string
	Schema     string
}

var pageTemplate = newPage("page", pageHTML)

// WriteHTML writes a self-contained HTML report: inline CSS, inline SVG
// charts, no scripts and no network references. Partial results render what
// was measured; a nil result renders a page that says so.
func WriteHTML(w io.Writer, r *model.Result) error {
	page := buildPage(r)
	return render(w, pageTemplate, page, "html")
}

func buildPage(r *model.Result) htmlPage {
	if r == nil {
		return htmlPage{Kind: "sonde report", Title: "sonde report", Errors: []string{"no result"}}
	}
	v := buildView(r)
	p := htmlPage{
		Kind:       "sonde report",
		Title:      "sonde report",
		Header:     v.Header,
		Grades:     v.Grades,
		Baseline:   v.Baseline,
		ClassesDur: v.ClassesDur,
		Classes:    v.Classes,
		Notes:      v.Notes,
		Errors:     v.Errors,
		Schema:     r.Schema,
	}
	server := r.Server.Address
	if server == "" {
		server = r.Config.Server
	}
	if server != "" {
		p.Title += ": " + server
	}
	if !r.Start.IsZero() {
		p.Subtitle = r.Start.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	p.Cards = append(cards(r), gradeCards(resultGrades(r))...)
	for _, d := range v.Directions {
		p.Directions = append(p.Directions, htmlDirection{directionView: d, Charts: directionCharts(r, d)})
	}
	p.CDF = rttCDF(r)
	return p
}

func cards(r *model.Result) []card {
	var cs []card
	for _, d := range directions(r) {
		key, title := directionTitle(d)
		c := card{Label: title, Value: units.FormatRate(d.GoodputBps)}
		if f := d.RFC6349; f != nil && f.DurationS > 0 {
			c.Sub = "steady state " + units.FormatRate(f.GoodputBps)
		}
		if tr := truthRate(r.Truth, key); tr > 0 {
			c.Sub = joinNotes(c.Sub, "configured "+units.FormatRate(tr))
		}
		cs = append(cs, c)
	}
	idle, haveIdle := idleMedian(r)
	if haveIdle {
		c := card{Label: "Idle RTT", Value: FormatMs(idle), Sub: "median, min " + FormatMs(r.Baseline.RTTMs.Min)}
		if r.Truth != nil && r.Truth.BaseRTTMs > 0 {
			c.Sub += "; configured " + FormatMs(r.Truth.BaseRTTMs)
		}
		cs = append(cs, c)
	}
	for _, d := range directions(r) {
		if d.Latency == nil || d.Latency.RTTMs.N == 0 {
			continue
		}
		key, title := directionTitle(d)
		c := card{Label: title + " RTT under load", Value: FormatMs(d.Latency.RTTMs.P50)}
		if haveIdle {
			added := d.Latency.RTTMs.P50 - idle
			c.Sub = FormatDeltaMs(added)
			_, c.Level = queueingVerdict(key, added)
		}
		if d.RPM != nil {
			c.Sub = joinNotes(c.Sub, formatRPM(d.RPM.RPM)+" RPM")
		}
		cs = append(cs, c)
	}
	return cs
}

// rateAxis picks a unit for a rate axis from its largest value.
func rateAxis(maxBps float64) (div float64, unit string) {
	switch {
	case maxBps >= 2e9:
		return 1e9, "Gbit/s"
	case maxBps >= 2e6:
		return 1e6, "Mbit/s"
	case maxBps >= 2e3:
		return 1e3, "kbit/s"
	}
	return 1, "bit/s"
}

// byteAxis picks a unit for a size axis from its largest value.
func byteAxis(maxB float64) (div float64, unit string) {
	switch {
	case maxB >= 2<<30:
		return 1 << 30, "GiB"
	case maxB >= 2<<20:
		return 1 << 20, "MiB"
	case maxB >= 2<<10:
		return 1 << 10, "KiB"
	}
	return 1, "B"
}

func directionCharts(r *model.Result, dv directionView) []figure {
	d := dv.d
	var figs []figure
	if fig, ok := throughputChart(r, dv.Key, d); ok {
		figs = append(figs, fig)
	}
	if fig, ok := loadedRTTChart(r, d); ok {
		figs = append(figs, fig)
	}
	if fig, ok := cwndChart(d); ok {
		figs = append(figs, fig)
	}
	return figs
}

func throughputChart(r *model.Result, key string, d *model.DirectionResult) (figure, bool) {
	peak := 0.0
	n := len(d.Throughput)
	for _, p := range d.Throughput {
		peak = math.Max(peak, p.Bps)
	}
	for _, f := range d.Flows {
		n += len(f.Throughput)
		for _, p := range f.Throughput {
			peak = math.Max(peak, p.Bps)
		}
	}
	if n == 0 {
		return figure{}, false
	}
	div, unit := rateAxis(peak)
	c := lineChart{Title: "Goodput over time", XLabel: "time since start (s)", YLabel: "goodput (" + unit + ")", YZero: true}
	// One flow is the aggregate: drawing both would hide one under the other.
	if len(d.Flows) > 1 || len(d.Throughput) == 0 {
		for i, f := range d.Flows {
			c.Series = append(c.Series, series{Name: "flow " + strconv.Itoa(f.ID),
				Points: ratePoints(f.Throughput, div), Color: palette[i%len(palette)], Width: 1.2})
		}
	}
	if len(d.Throughput) > 0 {
		c.Series = append(c.Series, series{Name: "all flows", Points: ratePoints(d.Throughput, div),
			Color: "#222", Width: 2.2})
	}
	if tr := truthRate(r.Truth, key); tr > 0 {
		c.Refs = append(c.Refs, refLine{Y: tr / div, Label: "configured rate", Color: "#888"})
	}
	if f := d.RFC6349; f != nil && f.WindowEndS > f.WindowStartS {
		c.Bands = append(c.Bands, band{X0: f.WindowStartS, X1: f.WindowEndS, Label: "steady state"})
	}
	return figure{Caption: "Goodput per flow and in total", SVG: template.HTML(c.svg())}, true
}

func ratePoints(rp []model.RatePoint, div float64) []point {
	pts := make([]point, 0, len(rp))
	for _, p := range rp {
		pts = append(pts, point{X: p.TS, Y: p.Bps / div})
	}
	return pts
}

func loadedRTTChart(r *model.Result, d *model.DirectionResult) (figure, bool) {
	if d.Latency == nil || len(d.Latency.Samples) == 0 {
		return figure{}, false
	}
	c := lineChart{Title: "RTT under load over time", XLabel: "time since start (s)", YLabel: "RTT (ms)", YZero: true}
	pts := make([]point, 0, len(d.Latency.Samples))
	for _, s := range d.Latency.Samples {
		pts = append(pts, point{X: s.TS, Y: s.RTTMs})
	}
	c.Series = append(c.Series, series{Name: "probe RTT", Points: pts, Color: palette[2]})
	if idle, ok := idleMedian(r); ok {
		c.Refs = append(c.Refs, refLine{Y: idle, Label: "idle median", Color: "#2e8b57"})
	}
	if r.Truth != nil && r.Truth.BaseRTTMs > 0 {
		c.Refs = append(c.Refs, refLine{Y: r.Truth.BaseRTTMs, Label: "configured RTT", Color: "#888"})
	}
	return figure{Caption: "RTT under load (probe flow)", SVG: template.HTML(c.svg())}, true
}

func cwndChart(d *model.DirectionResult) (figure, bool) {
	peak := 0.0
	n := 0
	for _, f := range d.Flows {
		for _, s := range f.TCPInfo {
			peak = math.Max(peak, float64(s.SndCwnd)*float64(s.SndMSS))
			n++
		}
	}
	if n == 0 {
		return figure{}, false
	}
	var bdp float64
	if d.RFC6349 != nil {
		bdp = d.RFC6349.BDPBits / 8
	}
	div, unit := byteAxis(math.Max(peak, bdp))
	c := lineChart{Title: "Congestion window over time", XLabel: "time since start (s)",
		YLabel: "cwnd (" + unit + ")", YZero: true}
	for i, f := range d.Flows {
		pts := make([]point, 0, len(f.TCPInfo))
		for _, s := range f.TCPInfo {
			pts = append(pts, point{X: s.TS, Y: float64(s.SndCwnd) * float64(s.SndMSS) / div})
		}
		name := "flow " + strconv.Itoa(f.ID)
		if f.Sender != "" {
			name += " (" + f.Sender + ")"
		}
		c.Series = append(c.Series, series{Name: name, Points: pts, Color: palette[i%len(palette)]})
	}
	if bdp > 0 {
		c.Refs = append(c.Refs, refLine{Y: bdp / div, Label: "BDP", Color: "#888"})
	}
	return figure{Caption: "Congestion window (snd_cwnd x snd_mss) per flow", SVG: template.HTML(c.svg())}, true
}

// rttCDF compares the idle and loaded RTT distributions on a log axis, where
// a queue shows as a curve shifted to the right.
func rttCDF(r *model.Result) *figure {
	c := lineChart{Title: "RTT distribution", XLabel: "RTT (ms, log scale)", YLabel: "samples below (%)",
		YZero: true, LogX: true}
	add := func(name, color string, rr *model.RTTResult) {
		if rr == nil || len(rr.Samples) == 0 {
			return
		}
		xs := make([]float64, 0, len(rr.Samples))
		for _, s := range rr.Samples {
			if finite(s.RTTMs) && s.RTTMs > 0 {
				xs = append(xs, s.RTTMs)
			}
		}
		if len(xs) == 0 {
			return
		}
		c.Series = append(c.Series, series{Name: name, Points: cdfPoints(xs), Color: color, Width: 2})
	}
	add("idle", "#2e8b57", r.Baseline)
	if r.Download != nil {
		add("download", palette[0], r.Download.Latency)
	}
	if r.Upload != nil {
		add("upload", palette[1], r.Upload.Latency)
	}
	if r.Bidir != nil {
		add("bidir", palette[2], r.Bidir.Latency)
	}
	if len(c.Series) == 0 {
		return nil
	}
	return &figure{Caption: "RTT distribution, idle and under load", SVG: template.HTML(c.svg())}
}

// cdfPoints is the empirical CDF of xs as a staircase, y in percent.
func cdfPoints(xs []float64) []point {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pts := make([]point, 0, 2*len(s))
	n := float64(len(s))
	for i, x := range s {
		pts = append(pts, point{X: x, Y: 100 * float64(i) / n}, point{X: x, Y: 100 * float64(i+1) / n})
	}
	return pts
}
