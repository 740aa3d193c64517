package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// headline is one figure a comparison shows, in its unit.
type headline struct {
	label string
	unit  string // bit/s, ms, %, B, s, RPM, or "" for a count
	v     float64
}

// formatValue prints v in the unit of a headline.
func formatValue(unit string, v float64) string {
	switch unit {
	case "bit/s":
		return units.FormatRate(v)
	case "ms":
		return FormatMs(v)
	case "%":
		return FormatPct(v, 2)
	case "B":
		return units.FormatBytes(v)
	case "s":
		return FormatDuration(v)
	case "RPM":
		return formatRPM(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// formatDiff prints b−a in the unit, with the relative change when a is
// not zero.
func formatDiff(unit string, a, b float64) string {
	d := b - a
	if !finite(d) {
		return na
	}
	var s string
	switch {
	case unit == "%":
		s = fmt.Sprintf("%+.2f points", d)
	case unit == "RPM":
		s = fmt.Sprintf("%+.0f", d)
	case d < 0:
		s = "-" + formatValue(unit, -d)
	default:
		s = "+" + formatValue(unit, d)
	}
	if unit != "%" && a != 0 && finite(a) {
		s += fmt.Sprintf(" (%+.0f %%)", 100*d/math.Abs(a))
	}
	return s
}

func resultHeadlines(r *model.Result) []headline {
	var hs []headline
	idle, haveIdle := idleMedian(r)
	if haveIdle {
		hs = append(hs, headline{"idle RTT median", "ms", idle})
	}
	for _, d := range directions(r) {
		key, _ := directionTitle(d)
		hs = append(hs, headline{key + " goodput", "bit/s", d.GoodputBps})
		if d.Latency != nil && d.Latency.RTTMs.N > 0 {
			hs = append(hs, headline{key + " RTT under load median", "ms", d.Latency.RTTMs.P50})
			if haveIdle {
				hs = append(hs, headline{key + " added latency", "ms", d.Latency.RTTMs.P50 - idle})
			}
		}
		if d.RPM != nil && d.RPM.RPM > 0 {
			hs = append(hs, headline{key + " responsiveness", "RPM", d.RPM.RPM})
		}
	}
	return hs
}

func udpHeadlines(r *model.UDPResult) []headline {
	var hs []headline
	for _, f := range r.Flows {
		prefix := ""
		if len(r.Flows) > 1 {
			prefix = f.Name + " "
		}
		if f.RTTMs.N > 0 {
			hs = append(hs, headline{prefix + "RTT median", "ms", f.RTTMs.P50}, headline{prefix + "RTT p99", "ms", f.RTTMs.P99})
		}
		for _, d := range []model.UDPDirectionStats{f.Forward, f.Backward} {
			if d.OWDMs.N > 0 {
				hs = append(hs, headline{prefix + d.Direction + " OWD median", "ms", d.OWDMs.P50})
			}
			hs = append(hs, headline{prefix + d.Direction + " jitter", "ms", d.JitterMs},
				headline{prefix + d.Direction + " loss", "%", d.LossPct})
		}
		if v := f.Voice; v != nil {
			hs = append(hs, headline{prefix + "MOS", "", math.Round(v.MOS*100) / 100})
		}
	}
	return hs
}

func analyzeHeadlines(r *model.Analysis) []headline {
	hs := []headline{
		{"packets", "", float64(r.Packets)},
		{"duration", "s", r.DurationS},
		{"TCP connections", "", float64(len(r.TCP))},
		{"QUIC flows", "", float64(len(r.QUIC))},
	}
	var data, retrans float64
	var rtts []float64
	for _, c := range r.TCP {
		data += float64(c.AB.DataBytes + c.BA.DataBytes)
		retrans += float64(c.AB.Retransmissions + c.BA.Retransmissions)
		if c.TSFull.Samples > 0 {
			rtts = append(rtts, c.TSFull.MedianMs)
		}
	}
	hs = append(hs, headline{"TCP data", "B", data}, headline{"TCP retransmissions", "", retrans})
	if len(rtts) > 0 {
		hs = append(hs, headline{"TCP RTT (TS full), median of connections", "ms", median(rtts)})
	}
	var spins []float64
	for _, q := range r.QUIC {
		if q.SpinRTT[0].Samples > 0 {
			spins = append(spins, q.SpinRTT[0].MedianMs)
		}
	}
	if len(spins) > 0 {
		hs = append(hs, headline{"QUIC spin RTT, median of flows", "ms", median(spins)})
	}
	return hs
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// comparison is the model of a side-by-side comparison: one row per
// headline figure, one value per result (NaN where a result lacks it).
type comparison struct {
	schema string
	names  []string
	runs   []string
	labels []string
	units  []string
	values [][]float64 // [row][result]
}

func compare(saved []*Saved) (*comparison, error) {
	if len(saved) == 0 {
		return nil, inputErrorf("no results")
	}
	c := &comparison{schema: saved[0].Schema()}
	index := map[string]int{}
	for i, s := range saved {
		if s.kind != saved[0].kind {
			return nil, inputErrorf("cannot compare results of different kinds: %s is %s, %s is %s", saved[0].Name, saved[0].Schema(), s.Name, s.Schema())
		}
		c.names = append(c.names, s.Name)
		c.runs = append(c.runs, s.kind.describe(s.v))
		for _, h := range s.kind.headlines(s.v) {
			row, ok := index[h.label]
			if !ok {
				row = len(c.labels)
				index[h.label] = row
				c.labels = append(c.labels, h.label)
				c.units = append(c.units, h.unit)
				vs := make([]float64, len(saved))
				for j := range vs {
					vs[j] = math.NaN()
				}
				c.values = append(c.values, vs)
			}
			c.values[row][i] = h.v
		}
	}
	return c, nil
}

// head is the column heads of the comparison: the figure, one column per
// result (numbered, the files are listed above the table), and the
// difference of each later result to the first.
func (c *comparison) head() []string {
	h := []string{""}
	for i := range c.names {
		h = append(h, "#"+strconv.Itoa(i+1))
	}
	for i := 1; i < len(c.names); i++ {
		h = append(h, fmt.Sprintf("#%d − #1", i+1))
	}
	return h
}

// cells are the formatted rows of the comparison.
func (c *comparison) cells() [][]string {
	var rows [][]string
	for r, label := range c.labels {
		vs := c.values[r]
		cells := []string{label}
		for _, v := range vs {
			cells = append(cells, cell(c.units[r], v))
		}
		for _, v := range vs[1:] {
			if math.IsNaN(v) || math.IsNaN(vs[0]) {
				cells = append(cells, "-")
				continue
			}
			cells = append(cells, formatDiff(c.units[r], vs[0], v))
		}
		rows = append(rows, cells)
	}
	return rows
}

func cell(unit string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return formatValue(unit, v)
}

// WriteCompareText writes the headline figures of one or more results of
// the same kind side by side, with the difference of each to the first.
func WriteCompareText(w io.Writer, saved []*Saved) error {
	c, err := compare(saved)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sonde report: %d results, schema %s\n", len(c.names), c.schema)
	for i := range c.names {
		fmt.Fprintf(&b, "  #%d  %s: %s\n", i+1, c.names[i], c.runs[i])
	}
	b.WriteString("\n")
	head := c.head()
	t := table{indent: "  ", right: make([]bool, len(head))}
	for i := 1; i < len(head); i++ {
		t.right[i] = true // the figures
	}
	t.row(head...)
	for _, r := range c.cells() {
		t.row(r...)
	}
	_ = t.write(&b)
	_, err = io.WriteString(w, b.String())
	return err
}

// WriteCompareCSV writes the comparison as CSV: figure, unit, then the
// value of each result (empty where it lacks the figure) in plain numbers
// of the unit, headed by the file names.
func WriteCompareCSV(w io.Writer, saved []*Saved) error {
	c, err := compare(saved)
	if err != nil {
		return err
	}
	var t table
	t.row(append([]string{"figure", "unit"}, c.names...)...)
	for r, label := range c.labels {
		cells := []string{label, c.units[r]}
		for _, v := range c.values[r] {
			s := ""
			if finite(v) {
				s = strconv.FormatFloat(v, 'f', -1, 64)
			}
			cells = append(cells, s)
		}
		t.row(cells...)
	}
	return t.writeCSV(w)
}

type comparePage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors                        []string
	Runs                          []row
	Head                          []string
	Rows                          [][]string
}

var compareTemplate = newPage("compare", compareHTML)

const compareHTML = `{{template "top" .}}<section><h2>Results</h2>{{template "rows" .Runs}}</section>
<section><h2>Headline figures</h2>{{template "grid" (arr .Head .Rows)}}</section>
{{template "foot" .}}`

// WriteCompareHTML writes the comparison as a self-contained HTML page in
// the shell of every report.
func WriteCompareHTML(w io.Writer, saved []*Saved) error {
	c, err := compare(saved)
	if err != nil {
		return err
	}
	p := comparePage{Kind: "sonde report", Title: "sonde report: comparison", Schema: c.schema,
		Subtitle: fmt.Sprintf("%d results", len(c.names)), Head: c.head(), Rows: c.cells()}
	for i := range c.names {
		p.Runs = append(p.Runs, row{Label: "#" + strconv.Itoa(i+1), Value: c.names[i], Note: c.runs[i]})
	}
	return render(w, compareTemplate, p, "comparison html")
}
