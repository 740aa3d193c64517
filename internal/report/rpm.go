package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// WriteRPMText writes the summary of a `sonde rpm` run: per direction its
// goodput, flows, RPM with both bands and confidence, then the overall RPM.
func WriteRPMText(w io.Writer, res *model.RPMResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sonde rpm  %s  (%s, ID %gs, MAD %d, SDT %g%%, trimmed mean %g%%)\n",
		res.ConfigURL, res.Protocol, res.IntervalS, res.MAD, res.SDTPct, 100-res.TrimPct)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "direction\tgoodput\tflows\tRPM\tband\tApple-style\tconfidence\tforeign tcp/tls/http ms\tself ms")
	for _, d := range res.Directions {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", d.Direction, units.FormatRate(d.GoodputBps), d.Flows, rpmCells(d.RPM, d.Confidence))
	}
	if res.Overall != nil {
		fmt.Fprintf(tw, "together\t\t\t%s\n", rpmCells(res.Overall, ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range res.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func rpmCells(f *model.RPMFigure, confidence string) string {
	if f == nil {
		return fmt.Sprintf("-\t-\t-\t%s\t-\t-", confidence)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%.1f/%.1f/%.1f\t%.1f", formatRPM(f.RPM), f.Band, f.AppleBand, confidence,
		f.ForeignTCPMs, f.ForeignTLSMs, f.ForeignHTTPMs, f.SelfHTTPMs)
}

type rpmPage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors, Notes                 []string
	Head                          []string
	Rows                          [][]string
	Directions                    []rpmDirView
}

type rpmDirView struct {
	Name string
	Head []string
	Rows [][]string
}

var rpmTemplate = newPage("rpm", `{{template "top" .}}{{$p := .}}<section><h2>Responsiveness</h2>
{{template "grid" (arr .Head .Rows)}}</section>
{{range .Directions}}<section><h2>{{.Name}}: intervals</h2>{{template "grid" (arr .Head .Rows)}}</section>{{end}}
{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`)

// WriteRPMHTML writes the self-contained report of a `sonde rpm` run.
func WriteRPMHTML(w io.Writer, res *model.RPMResult) error {
	p := rpmPage{Kind: "sonde rpm report", Title: "sonde rpm", Schema: res.Schema, Errors: res.Errors, Notes: res.Notes,
		Subtitle: fmt.Sprintf("%s · %s · %s", res.ConfigURL, res.Start.Format(time.RFC3339), res.Protocol),
		Head:     []string{"direction", "goodput", "flows", "RPM", "band", "Apple-style", "confidence", "foreign tcp/tls/http ms", "self ms"}}
	add := func(name, goodput, flows string, f *model.RPMFigure, conf string) {
		row := append([]string{name, goodput, flows}, strings.Split(rpmCells(f, conf), "\t")...)
		p.Rows = append(p.Rows, row)
		if f != nil {
			p.Cards = append(p.Cards, card{Label: name + " RPM", Value: formatRPM(f.RPM), Sub: f.Band + " · Apple-style " + f.AppleBand})
		}
	}
	for _, d := range res.Directions {
		add(d.Direction, units.FormatRate(d.GoodputBps), fmt.Sprint(d.Flows), d.RPM, d.Confidence)
		v := rpmDirView{Name: d.Direction, Head: []string{"end s", "flows", "goodput", "moving average", "RPM"}}
		for _, iv := range d.Intervals {
			v.Rows = append(v.Rows, []string{fmt.Sprintf("%.1f", iv.EndS), fmt.Sprint(iv.Flows),
				units.FormatRate(iv.GoodputBps), units.FormatRate(iv.MovingBps), formatRPM(iv.RPM)})
		}
		p.Directions = append(p.Directions, v)
	}
	if res.Overall != nil {
		add("together", "", "", res.Overall, "")
	}
	return render(w, rpmTemplate, p, "rpm html")
}

// rpmHeadlines are the figures `sonde report` compares across rpm runs.
func rpmHeadlines(r *model.RPMResult) []headline {
	var hs []headline
	for _, d := range r.Directions {
		hs = append(hs, headline{d.Direction + " goodput", "bit/s", d.GoodputBps})
		if d.RPM != nil {
			hs = append(hs, headline{d.Direction + " responsiveness", "RPM", d.RPM.RPM})
		}
	}
	if r.Overall != nil {
		hs = append(hs, headline{"responsiveness", "RPM", r.Overall.RPM})
	}
	return hs
}
