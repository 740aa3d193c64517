package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// `sonde mbm summary` (docs/mbm.md, "Summary"): many saved MBM results and
// compositions aggregated into one sonde.mbm-summary/v1 document, and its
// text, CSV and HTML (box plots of loss with p0 and p1, the histogram of
// packets to decide, the Q-Q plot of composed against measured loss).

// QQMinPackets is the packets every run of a composition must exceed for
// its pair to count in the Q-Q plot (seed 002 compared runs over 1000).
const QQMinPackets = 1000

// MBMSummarizer aggregates results one at a time, keeping only the
// figures the summary needs (a loss and a packet count per test), so
// that thousands of files are read without holding them.
type MBMSummarizer struct {
	results, compositions int
	groups                map[mbmGroupKey]*mbmGroupAcc
	decide                map[int]*model.MBMDecideBin // by log2 of the packets
	points                []model.MBMComposePoint
}

// mbmGroupKey is what makes runs comparable: the test, its transport and
// pattern, the target and the subpath with its p0.
type mbmGroupKey struct {
	id, transport, subpath string
	target                 model.MBMTarget
	p0, p1, derate         float64
	burst                  int64
}

type mbmGroupAcc struct {
	name          string
	verdicts      model.MBMVerdictCounts
	loss, decided []float64
}

// NewMBMSummarizer starts an empty summary.
func NewMBMSummarizer() *MBMSummarizer {
	return &MBMSummarizer{groups: map[mbmGroupKey]*mbmGroupAcc{}, decide: map[int]*model.MBMDecideBin{}}
}

// AddResult adds a run's tests (a plan has none).
func (s *MBMSummarizer) AddResult(r *model.MBMResult) {
	s.results++
	for _, x := range r.Tests {
		k := mbmGroupKey{id: x.ID, transport: x.Transport, subpath: r.Subpath, target: r.Target, p0: r.Model.P0, p1: r.Model.P1}
		// Only UDP tests record where the SPRT decided: a TCP test's
		// verdict may come from its rate precondition instead.
		decided := int64(0)
		switch {
		case x.UDP != nil:
			k.derate, k.burst = x.UDP.Derate, x.UDP.BurstPackets
			decided = x.UDP.DecisionPackets
		case x.TCP != nil:
			k.derate, k.burst = x.TCP.Derate, x.TCP.BurstPackets
		}
		if x.ID != "8.5.1" && x.ID != "8.4" {
			k.burst = 0 // the other patterns' "bursts" are the test's own, not a setting
		}
		g := s.groups[k]
		if g == nil {
			g = &mbmGroupAcc{name: x.Name}
			s.groups[k] = g
		}
		switch x.Verdict {
		case model.MBMPass:
			g.verdicts.Pass++
		case model.MBMFail:
			g.verdicts.Fail++
		case model.MBMInconclusive:
			g.verdicts.Inconclusive++
		default:
			g.verdicts.Error++
		}
		if x.Packets > 0 && finite(x.Loss) {
			g.loss = append(g.loss, x.Loss)
		}
		if (x.Verdict == model.MBMPass || x.Verdict == model.MBMFail) && decided > 0 {
			g.decided = append(g.decided, float64(decided))
			e := bits.Len64(uint64(decided)) - 1 // 2^e ≤ decided < 2^(e+1)
			bin := s.decide[e]
			if bin == nil {
				bin = decideBin(e)
				s.decide[e] = bin
			}
			if x.Verdict == model.MBMPass {
				bin.Pass++
			} else {
				bin.Fail++
			}
		}
	}
}

func decideBin(e int) *model.MBMDecideBin {
	lo := int64(1) << e
	return &model.MBMDecideBin{Low: lo, High: lo + (lo - 1)}
}

// AddComposition adds a composition's tests that recorded a measured
// end-to-end loss (compose --path).
func (s *MBMSummarizer) AddComposition(c *model.MBMComposition) {
	s.compositions++
	for _, t := range c.Tests {
		m := t.Measured
		if m == nil || !finite(t.Loss) || !finite(m.Loss) {
			continue
		}
		// Without the subpaths' counts (an older composition) no run is
		// known to exceed QQMinPackets.
		minN := int64(0)
		if len(t.SubpathPackets) > 0 {
			minN = m.Packets
			for _, n := range t.SubpathPackets {
				minN = min(minN, n)
			}
		}
		s.points = append(s.points, model.MBMComposePoint{TestID: t.ID, Composed: t.Loss, Measured: m.Loss, MinPackets: minN})
	}
}

// Summary is the aggregate so far.
func (s *MBMSummarizer) Summary() model.MBMSummary {
	out := model.MBMSummary{Schema: model.MBMSummarySchemaVersion, Results: s.results, Compositions: s.compositions,
		Groups: []model.MBMSummaryGroup{}, Decide: []model.MBMDecideBin{}}
	for k, g := range s.groups {
		out.Groups = append(out.Groups, model.MBMSummaryGroup{TestID: k.id, Name: g.name, Transport: k.transport, Target: k.target,
			Subpath: k.subpath, P0: k.p0, P1: k.p1, Derate: k.derate, BurstPackets: k.burst,
			Runs: g.verdicts.Pass + g.verdicts.Fail + g.verdicts.Inconclusive + g.verdicts.Error, Verdicts: g.verdicts,
			Loss: quartilesOf(g.loss), DecisionPackets: quartilesOf(g.decided)})
	}
	slices.SortFunc(out.Groups, func(a, b model.MBMSummaryGroup) int {
		return cmp.Or(cmp.Compare(a.TestID, b.TestID), cmp.Compare(a.Transport, b.Transport),
			cmp.Compare(a.Target.RateBps, b.Target.RateBps), cmp.Compare(a.Target.RTTMs, b.Target.RTTMs),
			cmp.Compare(a.Target.MTUBytes, b.Target.MTUBytes), cmp.Compare(a.Target.HeaderOverheadBytes, b.Target.HeaderOverheadBytes),
			cmp.Compare(a.Subpath, b.Subpath), cmp.Compare(a.P0, b.P0), cmp.Compare(a.P1, b.P1),
			cmp.Compare(a.Derate, b.Derate), cmp.Compare(a.BurstPackets, b.BurstPackets))
	})
	if len(s.decide) > 0 {
		lo, hi := 64, -1
		for e := range s.decide {
			lo, hi = min(lo, e), max(hi, e)
		}
		for e := lo; e <= hi; e++ { // empty bins between too: the gaps show
			if b := s.decide[e]; b != nil {
				out.Decide = append(out.Decide, *b)
			} else {
				out.Decide = append(out.Decide, *decideBin(e))
			}
		}
	}
	if len(s.points) > 0 {
		cs := &model.MBMComposeSummary{Points: slices.Clone(s.points), QQMinPackets: QQMinPackets}
		var over []model.MBMComposePoint
		for _, p := range s.points {
			if p.MinPackets > QQMinPackets {
				over = append(over, p)
			}
		}
		cs.QQ, cs.MaxDeviation = qqPairs(over)
		cs.QQAll, cs.MaxDeviationAll = qqPairs(s.points)
		out.Compose = cs
	}
	return out
}

// qqPairs pairs the sorted composed losses with the sorted measured ones,
// and returns the largest |difference|.
func qqPairs(pts []model.MBMComposePoint) ([]model.MBMQQPair, float64) {
	c, m := make([]float64, len(pts)), make([]float64, len(pts))
	for i, p := range pts {
		c[i], m[i] = p.Composed, p.Measured
	}
	slices.Sort(c)
	slices.Sort(m)
	out := make([]model.MBMQQPair, len(pts))
	dev := 0.0
	for i := range pts {
		out[i] = model.MBMQQPair{Composed: c[i], Measured: m[i]}
		dev = math.Max(dev, math.Abs(c[i]-m[i]))
	}
	return out, dev
}

// quartilesOf is the min, quartiles and max of v (linear interpolation
// between order statistics, as numpy's default).
func quartilesOf(v []float64) model.MBMQuartiles {
	if len(v) == 0 {
		return model.MBMQuartiles{}
	}
	s := slices.Sorted(slices.Values(v))
	at := func(f float64) float64 {
		pos := f * float64(len(s)-1)
		lo := int(math.Floor(pos))
		hi := min(lo+1, len(s)-1)
		return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
	}
	return model.MBMQuartiles{N: len(s), Min: s[0], Q1: at(0.25), Median: at(0.5), Q3: at(0.75), Max: s[len(s)-1]}
}

// mbmGroupLabel names a group in one line.
func mbmGroupLabel(g model.MBMSummaryGroup) string {
	s := g.TestID + " " + g.Transport
	if g.Derate > 0 {
		s += " derate " + strconv.FormatFloat(g.Derate, 'g', 4, 64)
	}
	if g.BurstPackets > 0 {
		s += fmt.Sprintf(" burst %d", g.BurstPackets)
	}
	if g.Subpath != "" {
		s += " subpath " + g.Subpath
	}
	return s
}

func mbmTargetLabel(t model.MBMTarget) string {
	return fmt.Sprintf("%s %g ms", units.FormatRate(t.RateBps), t.RTTMs)
}

func verdictCounts(v model.MBMVerdictCounts) string {
	var parts []string
	for _, c := range []struct {
		n    int
		name string
	}{{v.Pass, string(model.MBMPass)}, {v.Fail, string(model.MBMFail)}, {v.Inconclusive, string(model.MBMInconclusive)}, {v.Error, string(model.MBMError)}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func g4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// quartileCells are a sample's five figures as text ("-" when empty).
func quartileCells(q model.MBMQuartiles, format func(float64) string) []string {
	if q.N == 0 {
		return []string{"-", "-", "-", "-", "-"}
	}
	return []string{format(q.Min), format(q.Q1), format(q.Median), format(q.Q3), format(q.Max)}
}

func count(v float64) string { return strconv.FormatFloat(math.Round(v), 'f', 0, 64) }

// mbmSummaryGrid is the groups' table, for the text and the HTML.
func mbmSummaryGrid(s *model.MBMSummary) (head []string, rows [][]string) {
	head = []string{"#", "test", "target", "p0", "p1", "runs", "verdicts", "loss min", "q1", "median", "q3", "max",
		"decide min", "q1", "median", "q3", "max"}
	for i, g := range s.Groups {
		r := []string{"#" + strconv.Itoa(i+1), mbmGroupLabel(g), mbmTargetLabel(g.Target), g4(g.P0), g4(g.P1), strconv.Itoa(g.Runs), verdictCounts(g.Verdicts)}
		r = append(r, quartileCells(g.Loss, func(v float64) string { return strconv.FormatFloat(v, 'f', 5, 64) })...)
		r = append(r, quartileCells(g.DecisionPackets, count)...)
		rows = append(rows, r)
	}
	return head, rows
}

// WriteMBMSummaryText writes the groups' table, the histogram of packets
// to decide and the composed against measured losses.
func WriteMBMSummaryText(w io.Writer, s *model.MBMSummary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "MBM summary: %d results, %d compositions, %d groups\n", s.Results, s.Compositions, len(s.Groups))
	if len(s.Groups) > 0 {
		b.WriteString("\nloss m/n at the verdict; packets the SPRT took to decide (UDP PASS and FAIL)\n")
		head, rows := mbmSummaryGrid(s)
		t := table{right: []bool{false, false, false, true, true, true, false, true, true, true, true, true, true, true, true, true, true}}
		t.row(head...)
		for _, r := range rows {
			t.row(r...)
		}
		if err := t.write(&b); err != nil {
			return err
		}
	}
	pass, fail := 0, 0
	for _, d := range s.Decide {
		pass, fail = pass+d.Pass, fail+d.Fail
	}
	fmt.Fprintf(&b, "\npackets the SPRT took to decide (every UDP test's PASS and FAIL, %d and %d):\n", pass, fail)
	for _, d := range s.Decide {
		line := fmt.Sprintf("  %7d–%-7d PASS %-4d FAIL %-4d %s%s", d.Low, d.High, d.Pass, d.Fail,
			strings.Repeat("P", min(max(d.Pass, 0), 60)), strings.Repeat("F", min(max(d.Fail, 0), 60)))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	if c := s.Compose; c != nil {
		fmt.Fprintf(&b, "\ncomposed vs measured end-to-end loss: %d composed tests with a measured one, %d with every run over %d packets\n",
			len(c.Points), len(c.QQ), c.QQMinPackets)
		fmt.Fprintf(&b, "  max |composed − measured| over the Q-Q pairs: %.5f over %d packets, %.5f all\n", c.MaxDeviation, c.QQMinPackets, c.MaxDeviationAll)
		if len(c.QQ) > 0 {
			fmt.Fprintf(&b, "  Q-Q (sorted composed, sorted measured; runs over %d packets):\n", c.QQMinPackets)
			for _, p := range c.QQ {
				fmt.Fprintf(&b, "    %.5f  %.5f\n", p.Composed, p.Measured)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMBMSummaryCSV writes one row per group.
func WriteMBMSummaryCSV(w io.Writer, s *model.MBMSummary) error {
	t := table{}
	t.row("test_id", "transport", "rate_bps", "rtt_ms", "mtu_bytes", "subpath", "p0", "p1", "derate", "burst_packets", "runs",
		"pass", "fail", "inconclusive", "error", "loss_n", "loss_min", "loss_q1", "loss_median", "loss_q3", "loss_max",
		"decide_n", "decide_min", "decide_q1", "decide_median", "decide_q3", "decide_max")
	ff := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, g := range s.Groups {
		l, d := g.Loss, g.DecisionPackets
		t.row(g.TestID, g.Transport, ff(g.Target.RateBps), ff(g.Target.RTTMs), strconv.Itoa(g.Target.MTUBytes), g.Subpath, ff(g.P0), ff(g.P1),
			ff(g.Derate), n64(g.BurstPackets), strconv.Itoa(g.Runs), strconv.Itoa(g.Verdicts.Pass), strconv.Itoa(g.Verdicts.Fail),
			strconv.Itoa(g.Verdicts.Inconclusive), strconv.Itoa(g.Verdicts.Error),
			strconv.Itoa(l.N), ff(l.Min), ff(l.Q1), ff(l.Median), ff(l.Q3), ff(l.Max),
			strconv.Itoa(d.N), ff(d.Min), ff(d.Q1), ff(d.Median), ff(d.Q3), ff(d.Max))
	}
	return t.writeCSV(w)
}

// Colours of p0, p1 and the verdicts in the charts.
const (
	colorP0   = "#59a14f"
	colorP1   = "#e15759"
	colorPass = "#59a14f"
	colorFail = "#e15759"
)

func p0p1Refs(p0, p1 float64) []refLine {
	return []refLine{{Y: p0, Label: "p0 " + g4(p0), Color: colorP0}, {Y: p1, Label: "p1 " + g4(p1), Color: colorP1}}
}

func boxOf(i int, g model.MBMSummaryGroup) boxItem {
	q := g.Loss
	return boxItem{Label: "#" + strconv.Itoa(i+1), Min: q.Min, Q1: q.Q1, Median: q.Median, Q3: q.Q3, Max: q.Max,
		Title: fmt.Sprintf("#%d %s: %d runs, loss median %.5f (min %.5f, max %.5f); p0 %s, p1 %s",
			i+1, mbmGroupLabel(g), q.N, q.Median, q.Min, q.Max, g4(g.P0), g4(g.P1))}
}

// mbmLossCharts are the box plots of loss: one per family of groups that
// differ only by derate (x = derate) or burst size (x = burst), with its
// p0 and p1 across; every other group in one chart, numbered as in the
// table, with its own p0 and p1 beside its box when they differ.
func mbmLossCharts(s *model.MBMSummary) []figure {
	type family struct {
		id, transport, subpath string
		target                 model.MBMTarget
		p0, p1                 float64
	}
	famOf := func(g model.MBMSummaryGroup) family {
		return family{g.TestID, g.Transport, g.Subpath, g.Target, g.P0, g.P1}
	}
	members := map[family][]int{}
	var order []family
	for i, g := range s.Groups {
		if g.Loss.N == 0 {
			continue
		}
		f := famOf(g)
		if members[f] == nil {
			order = append(order, f)
		}
		members[f] = append(members[f], i)
	}
	var figs []figure
	var rest []int
	for _, f := range order {
		idx := members[f]
		derates, bursts := map[float64]bool{}, map[int64]bool{}
		for _, i := range idx {
			derates[s.Groups[i].Derate], bursts[s.Groups[i].BurstPackets] = true, true
		}
		byDerate := len(derates) == len(idx) && len(idx) > 1
		byBurst := !byDerate && len(bursts) == len(idx) && len(idx) > 1
		if !byDerate && !byBurst {
			rest = append(rest, idx...)
			continue
		}
		c := boxChart{Title: fmt.Sprintf("loss by %s, %s %s", map[bool]string{true: "derate", false: "burst"}[byDerate], f.id, f.transport),
			XLabel: "derate", YLabel: "loss m/n (log)", Numeric: true, LogY: true, Refs: p0p1Refs(f.p0, f.p1)}
		if byBurst {
			c.XLabel = "burst (packets)"
		}
		for _, i := range idx {
			bx := boxOf(i, s.Groups[i])
			bx.X = s.Groups[i].Derate
			if byBurst {
				bx.X = float64(s.Groups[i].BurstPackets)
			}
			c.Boxes = append(c.Boxes, bx)
		}
		caption := fmt.Sprintf("%s %s, target %s%s: loss per %s; p0 and p1 dashed; 0 at the bottom", f.id, f.transport, mbmTargetLabel(f.target),
			map[bool]string{true: ", subpath " + f.subpath, false: ""}[f.subpath != ""], c.XLabel)
		figs = append(figs, figure{Caption: caption, SVG: template.HTML(c.svg())})
	}
	if len(rest) > 0 {
		c := boxChart{Title: "loss by group", XLabel: "group (see the table)", YLabel: "loss m/n (log)", LogY: true}
		same := true
		for _, i := range rest {
			same = same && s.Groups[i].P0 == s.Groups[rest[0]].P0 && s.Groups[i].P1 == s.Groups[rest[0]].P1
		}
		if same {
			c.Refs = p0p1Refs(s.Groups[rest[0]].P0, s.Groups[rest[0]].P1)
		}
		for _, i := range rest {
			bx := boxOf(i, s.Groups[i])
			if !same {
				bx.Refs = p0p1Refs(s.Groups[i].P0, s.Groups[i].P1)
			}
			c.Boxes = append(c.Boxes, bx)
		}
		caption := "loss per group; p0 and p1 dashed; 0 at the bottom"
		if !same {
			caption += " beside each box (they differ between groups)"
			c.Keys = []refLine{{Label: "p0 of each group", Color: colorP0}, {Label: "p1 of each group", Color: colorP1}}
		}
		figs = append(figs, figure{Caption: caption, SVG: template.HTML(c.svg())})
	}
	return figs
}

// mbmDecideChart is the histogram of packets to decide, PASS and FAIL
// stacked.
func mbmDecideChart(s *model.MBMSummary) figure {
	c := barChart{Title: "packets to decide", XLabel: "packets to decide (bins of powers of two)", YLabel: "tests",
		Stacks: []barStack{{Name: string(model.MBMPass), Color: colorPass}, {Name: string(model.MBMFail), Color: colorFail}}}
	for _, d := range s.Decide {
		c.Bins = append(c.Bins, shortCount(d.Low)+"–"+shortCount(d.High))
		c.Stacks[0].Counts = append(c.Stacks[0].Counts, float64(d.Pass))
		c.Stacks[1].Counts = append(c.Stacks[1].Counts, float64(d.Fail))
	}
	return figure{Caption: "the SPRT's packets to decide, every UDP test's PASS and FAIL", SVG: template.HTML(c.svg())}
}

// shortCount writes 1536 as 1.5k, for axis labels.
func shortCount(n int64) string {
	switch {
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'g', 3, 64) + "M"
	case n >= 1e4:
		return strconv.FormatFloat(float64(n)/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// mbmQQChart is the Q-Q plot of composed against measured end-to-end
// loss with the diagonal; the pairs of runs over QQMinPackets filled,
// those of every run hollow.
func mbmQQChart(c *model.MBMComposeSummary) figure {
	lo, hi := math.Inf(1), math.Inf(-1)
	var all, over []point
	for _, p := range c.QQAll {
		all = append(all, point{X: p.Measured, Y: p.Composed})
		lo, hi = math.Min(lo, math.Min(p.Measured, p.Composed)), math.Max(hi, math.Max(p.Measured, p.Composed))
	}
	for _, p := range c.QQ {
		over = append(over, point{X: p.Measured, Y: p.Composed})
	}
	overName := fmt.Sprintf("runs over %d packets", c.QQMinPackets)
	ch := lineChart{Title: "composed vs measured end-to-end loss (Q-Q)", XLabel: "measured end-to-end loss (quantiles)", YLabel: "composed loss (quantiles)",
		Series: []series{{Name: "y = x", Points: []point{{lo, lo}, {hi, hi}}, Color: "#999", Dash: true, Width: 1}}}
	custom := map[string]bool{overName: true}
	if len(all) > len(over) {
		ch.Series = append(ch.Series, series{Name: "every run", Points: all, Color: palette[0]})
		custom["every run"] = true
	}
	ch.Series = append(ch.Series, series{Name: overName, Points: over, Color: palette[1]})
	svg := ch.svgWith(func(b *strings.Builder, xs, ys scale) {
		if len(all) > len(over) {
			writeMarks(b, all, xs, ys, palette[0], true, "every run")
		}
		writeMarks(b, over, xs, ys, palette[1], false, overName)
	}, custom)
	caption := fmt.Sprintf("Q-Q: %d pairs over %d packets (filled), max |composed − measured| %.5f", len(over), c.QQMinPackets, c.MaxDeviation)
	if len(all) > len(over) {
		caption += fmt.Sprintf("; every run hollow (%d), max %.5f", len(all), c.MaxDeviationAll)
	}
	return figure{Caption: caption, SVG: template.HTML(svg)}
}

type mbmSummaryPage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors                        []string
	LossCharts                    []figure
	Head                          []string
	Rows                          [][]string
	Decide                        figure
	QQ                            *figure
	QQNote                        string
}

var mbmSummaryTemplate = newPage("mbm-summary", mbmSummaryHTML)

const mbmSummaryHTML = `{{template "top" .}}<section id="loss"><h2>Loss by setting</h2><p class="sub">Loss m/n at each run's verdict: box from q1 to q3, the median, whiskers from min to max; the test's p0 (PASS) and p1 (FAIL) dashed.</p>
<div class="charts">{{range .LossCharts}}<figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure>{{end}}</div>
{{if .Rows}}{{template "grid" (arr .Head .Rows)}}{{end}}</section>
<section id="decide"><h2>Packets to decide</h2><div class="charts"><figure><figcaption>{{.Decide.Caption}}</figcaption>{{.Decide.SVG}}</figure></div></section>
{{with .QQ}}<section id="qq"><h2>Composed vs measured end-to-end loss</h2><p class="sub">{{$.QQNote}}</p><div class="charts"><figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure></div></section>{{end}}
{{template "foot" .}}`

// WriteMBMSummaryHTML writes the self-contained HTML report of a summary.
func WriteMBMSummaryHTML(w io.Writer, s *model.MBMSummary) error {
	p := mbmSummaryPage{Kind: "sonde mbm summary", Title: "sonde mbm summary (RFC 8337)", Schema: s.Schema,
		Subtitle:   fmt.Sprintf("%d results, %d compositions", s.Results, s.Compositions),
		LossCharts: mbmLossCharts(s), Decide: mbmDecideChart(s)}
	p.Head, p.Rows = mbmSummaryGrid(s)
	var v model.MBMVerdictCounts
	for _, g := range s.Groups {
		v.Pass, v.Fail, v.Inconclusive, v.Error = v.Pass+g.Verdicts.Pass, v.Fail+g.Verdicts.Fail, v.Inconclusive+g.Verdicts.Inconclusive, v.Error+g.Verdicts.Error
	}
	p.Cards = []card{
		{Label: "groups", Value: strconv.Itoa(len(s.Groups)), Sub: fmt.Sprintf("%d results", s.Results)},
		{Label: string(model.MBMPass), Value: strconv.Itoa(v.Pass), Level: levelOK},
		{Label: string(model.MBMFail), Value: strconv.Itoa(v.Fail), Level: levelBad},
		{Label: "INCONCLUSIVE, ERROR", Value: fmt.Sprintf("%d, %d", v.Inconclusive, v.Error), Level: levelWarn},
	}
	if c := s.Compose; c != nil {
		f := mbmQQChart(c)
		p.QQ = &f
		p.QQNote = fmt.Sprintf("%d composed tests (sonde mbm compose --path) beside the loss measured end to end on the same path; the Q-Q plot pairs the sorted composed losses with the sorted measured ones, which lie near the diagonal when composition holds.", len(c.Points))
		p.Cards = append(p.Cards, card{Label: "max |composed − measured|", Value: fmt.Sprintf("%.5f", c.MaxDeviation), Sub: fmt.Sprintf("%d Q-Q pairs over %d packets", len(c.QQ), c.QQMinPackets)})
	}
	return render(w, mbmSummaryTemplate, p, "mbm summary html")
}

// mbmSummaryHeadlines are the figures a comparison of summaries shows:
// per group, its runs and median loss.
func mbmSummaryHeadlines(s *model.MBMSummary) []headline {
	var h []headline
	for _, g := range s.Groups {
		l := mbmGroupLabel(g)
		h = append(h, headline{label: l + " runs", v: float64(g.Runs)}, headline{label: l + " FAIL", v: float64(g.Verdicts.Fail)},
			headline{label: l + " median loss", unit: "%", v: 100 * g.Loss.Median})
	}
	if c := s.Compose; c != nil {
		h = append(h, headline{label: "max |composed − measured|", unit: "%", v: 100 * c.MaxDeviation})
	}
	return h
}
