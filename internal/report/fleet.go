package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// The fleet report (`sonde fleet report`, schema sonde.fleet/v1): a table
// of monitors with their verdict per profile and the answer to "their
// line or upstream?", the same per label group, the upstream events and
// the worst hours. Text, HTML and CSV are built from the same grids
// (fleetView).

type fleetView struct {
	Title, Subtitle string
	Header          []row
	Monitors        grid
	Worst           grid
	Groups          grid
	Upstream        grid
	Outages         grid
	Notes           []string
}

func verdictCell(v model.FleetVerdict) string {
	s := v.Verdict
	if v.Whole.Sent > 0 {
		s += " " + pctR(v.Whole.R)
		if v.Approx {
			s += "≥"
		}
	}
	return s
}

func buildFleetView(r *model.FleetReport) fleetView {
	v := fleetView{Title: "sonde fleet report"}
	v.Subtitle = utc(r.FromNs) + " to " + utc(r.ToNs) + " UTC"
	filter := r.Filter
	if filter == "" {
		filter = "all monitors"
	}
	v.Header = []row{
		{Label: "range", Value: v.Subtitle},
		{Label: "monitors", Value: strconv.Itoa(len(r.Monitors)), Note: filter},
		{Label: "read", Value: r.Source},
		{Label: "upstream rule", Value: fmt.Sprintf("≥ %d monitors down at once, or ≥ %.0f %% of a label group", r.UpstreamMin, 100*r.UpstreamShare)},
	}
	var profs []string
	for _, p := range r.Profiles {
		profs = append(profs, fmt.Sprintf("%s R(%s) ≥ %s %%", p.Name, durationNs(p.LatencyNs), pctR(p.Reliability)))
	}
	v.Header = append(v.Header, row{Label: "profiles", Value: strings.Join(profs, "; ")})

	head := []string{"monitor", "labels", "sent", "loss %", "RTT p50 ms", "RTT p95 ms"}
	for _, p := range r.Profiles {
		head = append(head, p.Name)
	}
	head = append(head, "outages line", "upstream", "cause", "worst grade")
	v.Monitors = grid{Title: "Monitors (verdict and R % per profile over the range)", Head: head, right: rightFrom(len(head), 2)}
	v.Monitors.right[1] = false
	for _, m := range r.Monitors {
		cells := []string{m.Name, labelText(m.Labels), num(m.Sent), fleetLossPct(m.Lost, m.Sent), nsMs(float64(m.RTT.P50Ns)), nsMs(float64(m.RTT.P95Ns))}
		for _, vd := range m.Verdicts {
			cells = append(cells, verdictCell(vd))
		}
		grade := m.Worst
		if grade == "" {
			grade = "-"
		}
		cells = append(cells, outageText(m.Line), outageText(m.Up), m.Cause, grade)
		v.Monitors.Rows = append(v.Monitors.Rows, cells)
	}

	v.Worst = grid{Title: "Profiles failed in some hour (the worst aligned hour)", Head: []string{"monitor", "profile", "hours", "failing", "worst R %", "at"}, right: []bool{false, false, true, true, true, false}}
	for _, m := range r.Monitors {
		for _, vd := range m.Verdicts {
			if vd.FailHours == 0 {
				continue
			}
			v.Worst.Rows = append(v.Worst.Rows, []string{m.Name, vd.Profile, strconv.Itoa(vd.Hours), strconv.Itoa(vd.FailHours), pctR(vd.WorstHour.R), utc(vd.WorstHourNs)})
		}
	}

	gh := []string{"label", "monitors", "sent", "loss %"}
	for _, p := range r.Profiles {
		gh = append(gh, p.Name, "failing")
	}
	v.Groups = grid{Title: "Label groups (pooled)", Head: gh, right: rightFrom(len(gh), 1)}
	for _, g := range r.Groups {
		cells := []string{g.Label + "=" + g.Value, strconv.Itoa(g.Monitors), num(g.Sent), fleetLossPct(g.Lost, g.Sent)}
		for i, vd := range g.Verdicts {
			f := 0
			if i < len(g.Failing) {
				f = g.Failing[i]
			}
			cells = append(cells, verdictCell(vd), strconv.Itoa(f))
		}
		v.Groups.Rows = append(v.Groups.Rows, cells)
	}

	v.Upstream = grid{Title: "Upstream events (outages seen by many monitors at once)", Head: []string{"#", "start", "duration", "monitors", "targets", "rule", "which"}, right: []bool{true, false, true, true}}
	for i, u := range r.Upstream {
		targets := strings.Join(u.Targets, ", ")
		if targets == "" {
			targets = "whole link"
		}
		v.Upstream.Rows = append(v.Upstream.Rows, []string{strconv.Itoa(i + 1), utc(u.StartNs), durationNs(u.EndNs - u.StartNs), strconv.Itoa(len(u.Monitors)), targets, u.Rule, listShort(u.Monitors, 8)})
	}

	v.Outages = grid{Title: "Outages", Head: []string{"monitor", "start", "duration", "scope", "cause"}, right: []bool{false, false, true}}
	for _, m := range r.Monitors {
		for _, o := range m.Outages {
			scope := o.Scope
			if o.Target != "" {
				scope += " " + o.Target
			}
			cause := "line"
			if o.Upstream > 0 {
				cause = "upstream #" + strconv.Itoa(o.Upstream)
			}
			v.Outages.Rows = append(v.Outages.Rows, []string{m.Name, utc(o.StartNs), durationNs(o.EndNs - o.StartNs), scope, cause})
		}
	}
	sort.SliceStable(v.Outages.Rows, func(i, j int) bool { return v.Outages.Rows[i][1] < v.Outages.Rows[j][1] })
	v.Notes = r.Notes
	return v
}

func labelText(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, " ")
}

func fleetLossPct(lost, sent uint64) string {
	if sent == 0 {
		return "-"
	}
	return fixed(100*float64(lost)/float64(sent), 3)
}

func outageText(o model.FleetOutageTime) string {
	if o.Count == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", o.Count, durationNs(int64(o.Seconds*1e9)))
}

func listShort(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return strings.Join(s[:n], ", ") + fmt.Sprintf(" and %d more", len(s)-n)
}

// WriteFleetText writes the fleet report as text.
func WriteFleetText(w io.Writer, r *model.FleetReport) error {
	if r == nil {
		return fmt.Errorf("report: no fleet report")
	}
	v := buildFleetView(r)
	var b strings.Builder
	writeTitled(&b, v.Title, v.Header)
	for _, g := range []grid{v.Monitors, v.Groups, v.Upstream, v.Outages, v.Worst} {
		b.WriteString("\n" + g.Title + "\n")
		if len(g.Rows) == 0 {
			b.WriteString("  none\n")
			continue
		}
		_ = g.table("  ").write(&b)
	}
	if len(v.Notes) > 0 {
		b.WriteString("\nNotes\n")
		for _, n := range v.Notes {
			b.WriteString("  - " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFleetCSV writes one row per monitor and profile: the verdict, R
// with its interval, the worst hour, and the outage causes.
func WriteFleetCSV(w io.Writer, r *model.FleetReport) error {
	t := &table{}
	t.row("monitor", "labels", "profile", "latency_ms", "required", "verdict", "sent", "ok", "r", "lower", "upper", "approx",
		"hours", "fail_hours", "worst_hour_r", "worst_hour_start", "cause", "line_outages", "line_s", "upstream_outages", "upstream_s")
	for _, m := range r.Monitors {
		for i, vd := range m.Verdicts {
			var p model.RequirementProfile
			if i < len(r.Profiles) {
				p = r.Profiles[i]
			}
			t.row(m.Name, labelText(m.Labels), vd.Profile, fixed(float64(p.LatencyNs)/1e6, 3), strconv.FormatFloat(p.Reliability, 'g', -1, 64),
				vd.Verdict, num(vd.Whole.Sent), num(vd.Whole.OK), fixed(vd.Whole.R, 6), fixed(vd.Whole.Lower, 6), fixed(vd.Whole.Upper, 6), strconv.FormatBool(vd.Approx),
				strconv.Itoa(vd.Hours), strconv.Itoa(vd.FailHours), fixed(vd.WorstHour.R, 6), utc(vd.WorstHourNs),
				m.Cause, strconv.Itoa(m.Line.Count), fixed(m.Line.Seconds, 1), strconv.Itoa(m.Up.Count), fixed(m.Up.Seconds, 1))
		}
	}
	return t.writeCSV(w)
}

type fleetPage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors                        []string
	fleetView
}

var fleetTemplate = newPage("fleet", fleetHTML)

const fleetHTML = `{{template "top" .}}<section><h2>Report</h2>{{template "rows" .Header}}</section>
{{range (arr .Monitors .Groups .Upstream .Outages .Worst)}}<section><h2>{{.Title}}</h2>{{if .Rows}}{{template "grid" (arr .Head .Rows)}}{{else}}<p>None.</p>{{end}}</section>
{{end}}{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`

// WriteFleetHTML writes the self-contained HTML fleet report: the tables
// of the text, with headline cards.
func WriteFleetHTML(w io.Writer, r *model.FleetReport) error {
	p := fleetPage{Kind: "sonde fleet report", Title: "sonde fleet report"}
	if r == nil {
		p.Errors = []string{"no report"}
		return render(w, fleetTemplate, p, "fleet html")
	}
	p.fleetView = buildFleetView(r)
	p.Subtitle, p.Schema = p.fleetView.Subtitle, r.Schema
	p.Cards = append(p.Cards, card{Label: "monitors", Value: strconv.Itoa(len(r.Monitors))})
	for i, pr := range r.Profiles {
		fail := 0
		for _, m := range r.Monitors {
			if i < len(m.Verdicts) && m.Verdicts[i].Verdict == model.VerdictFail {
				fail++
			}
		}
		c := card{Label: pr.Name + " failing", Value: strconv.Itoa(fail), Level: levelOK}
		if fail > 0 {
			c.Level = levelBad
		}
		p.Cards = append(p.Cards, c)
	}
	p.Cards = append(p.Cards, card{Label: "upstream events", Value: strconv.Itoa(len(r.Upstream))})
	return render(w, fleetTemplate, p, "fleet html")
}

// fleetHeadlines are the figures `sonde report A B` compares.
func fleetHeadlines(r *model.FleetReport) []headline {
	var hs []headline
	for i, p := range r.Profiles {
		fail := 0
		for _, m := range r.Monitors {
			if i < len(m.Verdicts) && m.Verdicts[i].Verdict == model.VerdictFail {
				fail++
			}
		}
		hs = append(hs, headline{p.Name + " monitors failing", "", float64(fail)})
	}
	return append(hs, headline{"upstream events", "", float64(len(r.Upstream))})
}
