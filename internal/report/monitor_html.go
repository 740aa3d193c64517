package report

import (
	"html/template"
	"io"
	"strconv"

	"github.com/sonde-project/sonde/internal/model"
)

type monitorPage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors                        []string
	monitorView
	Sections []monitorSection
}

type monitorSection struct {
	monitorStreamView
	Charts []figure
}

var monitorTemplate = newPage("monitor", monitorHTML)

const monitorHTML = `{{template "top" .}}<section><h2>Report</h2>{{template "rows" .Header}}</section>
{{range .Sections}}<section id="{{.Key}}"><h2>{{.Name}}</h2>
{{if .Charts}}<div class="charts">{{range .Charts}}<figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure>{{end}}</div>{{end}}
{{range (arr .Summary .Delay .Rel .Windows .Verdict)}}{{if .Rows}}<h3>{{.Title}}</h3>{{template "grid" (arr .Head .Rows)}}{{end}}{{end}}
</section>
{{end}}{{with .Daily}}{{if .Rows}}<section id="daily"><h2>{{.Title}}</h2>{{template "grid" (arr .Head .Rows)}}</section>{{end}}{{end}}
<section id="events"><h2>Events</h2>{{with .Events}}{{if .Rows}}{{template "grid" (arr .Head .Rows)}}{{else}}<p>None in this range.</p>{{end}}{{end}}</section>
{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`

// WriteMonitorHTML writes the self-contained HTML monitor report: the
// tables of the text, and per stream a CDF of the RTT (all probes and per
// load state) and the delay and loss over time.
func WriteMonitorHTML(w io.Writer, r *model.MonitorReport) error {
	p := monitorPage{Kind: "sonde monitor report", Title: "sonde monitor report"}
	if r == nil {
		p.Errors = []string{"no report"}
		return render(w, monitorTemplate, p, "monitor html")
	}
	p.monitorView = buildMonitorView(r)
	// The page's own fields would hide the view's: the title names the
	// monitor, the subtitle the range.
	p.Title, p.Subtitle = p.monitorView.Title, p.monitorView.Subtitle
	p.Schema = r.Schema
	var sent, lost uint64
	for _, s := range r.Stats {
		sent += s.Sent
		lost += s.Lost
	}
	p.Cards = append(p.Cards, card{Label: "probes sent", Value: num(sent), Sub: r.Source})
	if sent > 0 {
		p.Cards = append(p.Cards, card{Label: "loss", Value: FormatPct(100*float64(lost)/float64(sent), 3)})
	}
	p.Cards = append(p.Cards, card{Label: "events", Value: strconv.Itoa(len(r.Events))})
	for i, sv := range p.Streams {
		sec := monitorSection{monitorStreamView: sv}
		stream := r.Stats[i].Stream
		if f := monitorCDF(r, stream); f != nil {
			sec.Charts = append(sec.Charts, *f)
		}
		sec.Charts = append(sec.Charts, monitorSeries(r, stream)...)
		p.Sections = append(p.Sections, sec)
	}
	return render(w, monitorTemplate, p, "monitor html")
}

// monitorCDF draws a stream's RTT distributions on a log axis: all probes
// and each load state, where a queue shows as a curve shifted right.
func monitorCDF(r *model.MonitorReport, stream int32) *figure {
	c := lineChart{Title: "RTT distribution per load state", XLabel: "RTT (ms, log scale)", YLabel: "probes at or below (%)", YZero: true, LogX: true}
	for _, d := range r.CDFs {
		if d.Stream != stream || len(d.Points) == 0 {
			continue
		}
		pts := make([]point, 0, len(d.Points))
		for _, q := range d.Points {
			pts = append(pts, point{X: float64(q.RTTNs) / 1e6, Y: 100 * q.Fraction})
		}
		s := series{Name: d.Load + " (" + num(d.N) + ")", Points: pts, Width: 1.5}
		if d.Load == "all" {
			s.Color, s.Width = "#222", 2.2
		}
		c.Series = append(c.Series, s)
	}
	if len(c.Series) == 0 {
		return nil
	}
	return &figure{Caption: "RTT distribution (all probes and per load state)", SVG: template.HTML(c.svg())}
}

// monitorSeries draws a stream's p50 and p99 RTT and its loss over time.
func monitorSeries(r *model.MonitorReport, stream int32) []figure {
	for _, s := range r.Series {
		if s.Stream != stream || len(s.Points) == 0 {
			continue
		}
		unit, div := "h", 3600e9
		if r.ToNs-r.FromNs > 3*24*3600e9 {
			unit, div = "days", 24*3600e9
		}
		x := func(ns int64) float64 { return float64(ns-r.FromNs) / div }
		var p50, p99, loss []point
		for _, q := range s.Points {
			if q.Sent == 0 {
				continue
			}
			if q.Sent > q.Lost {
				p50 = append(p50, point{X: x(q.StartNs), Y: float64(q.P50Ns) / 1e6})
				p99 = append(p99, point{X: x(q.StartNs), Y: float64(q.P99Ns) / 1e6})
			}
			loss = append(loss, point{X: x(q.StartNs), Y: 100 * float64(q.Lost) / float64(q.Sent)})
		}
		every := durationNs(s.BucketNs)
		d := lineChart{Title: "RTT over time", XLabel: "time since start (" + unit + ")", YLabel: "RTT (ms)", YZero: true,
			Series: []series{{Name: "p50", Points: p50, Color: palette[0]}, {Name: "p99", Points: p99, Color: palette[2]}}}
		l := lineChart{Title: "Loss over time", XLabel: "time since start (" + unit + ")", YLabel: "lost (%)", YZero: true,
			Series: []series{{Name: "loss", Points: loss, Color: palette[1]}}}
		return []figure{
			{Caption: "RTT p50 and p99 per " + every, SVG: template.HTML(d.svg())},
			{Caption: "Probes lost per " + every + " (late replies count as lost)", SVG: template.HTML(l.svg())},
		}
	}
	return nil
}
