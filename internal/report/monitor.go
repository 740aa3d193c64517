package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// The monitor report (`sonde monitor report`, schema sonde.monitor/v1):
// seed 001's tables per stream (Table 19: statistics of the RTT; Table 20:
// reliability for latency requirements), the worst sliding windows, R(L)
// per load state, profile verdicts, a table per day and the events. Text,
// HTML and CSV are built from the same tables (monitorView).

// grid is one table of the monitor report: a head and rows, with the
// right-aligned (numeric) columns.
type grid struct {
	Title string
	Head  []string
	Rows  [][]string
	right []bool
}

func (g *grid) table(indent string) *table {
	t := &table{indent: indent, right: g.right}
	t.row(g.Head...)
	for _, r := range g.Rows {
		t.row(r...)
	}
	return t
}

// monitorView is what every rendering of a monitor report shows.
type monitorView struct {
	Title, Subtitle string
	Header          []row
	Streams         []monitorStreamView
	Daily           grid
	Events          grid
	Notes           []string
}

type monitorStreamView struct {
	Name    string
	Key     string // HTML anchor
	Summary grid   // Table 19
	Delay   grid
	Rel     grid // Table 20, with R per load state
	Windows grid
	Verdict grid
}

func nsMs(ns float64) string { return msNumber(ns / 1e6) }

func pctR(r float64) string { return fixed(100*r, 2) }

func utc(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05") }

// durationNs prints a requirement or window length as a person writes it.
func durationNs(ns int64) string { return shortDur(time.Duration(ns)) }

func shortDur(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " h"
	case d >= time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	case d >= time.Second && d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + " ms"
	}
	return msNumber(float64(d)/1e6) + " ms"
}

func streamName(r *model.MonitorReport, i int32) string {
	if i < 0 {
		return "link (all streams)"
	}
	if int(i) < len(r.Streams) {
		return r.Streams[i].Name
	}
	return "stream " + strconv.Itoa(int(i))
}

func buildMonitorView(r *model.MonitorReport) monitorView {
	v := monitorView{Title: "sonde monitor report"}
	if r.Monitor != "" {
		v.Title += ": " + r.Monitor
	}
	span := float64(r.ToNs-r.FromNs) / 1e9
	v.Subtitle = fmt.Sprintf("%s to %s UTC (%s) · source: %s", utc(r.FromNs), utc(r.ToNs), FormatDuration(span), r.Source)
	v.Header = []row{{Label: "range", Value: utc(r.FromNs) + " to " + utc(r.ToNs) + " UTC", Note: FormatDuration(span)}}
	src := row{Label: "source", Value: r.Source}
	switch {
	case r.RawFromNs > r.FromNs && r.RawFromNs < r.ToNs:
		src.Note = "rollups before " + utc(r.RawFromNs) + ", raw samples after"
	case r.Source == "raw":
		src.Note = "every probe as stored: exact"
	case r.Source == "rollups":
		src.Note = "per-minute rollups: raw samples have been retained away"
	}
	v.Header = append(v.Header, src)
	var sent, lost uint64
	for _, s := range r.Stats {
		sent += s.Sent
		lost += s.Lost
	}
	v.Header = append(v.Header, row{Label: "probes", Value: fmt.Sprintf("%d sent, %d lost", sent, lost), Note: fmt.Sprintf("%d streams", len(r.Streams))})
	for _, p := range r.Profiles {
		v.Header = append(v.Header, row{Label: "profile " + p.Name, Value: fmt.Sprintf("%s of probes within %s", FormatPct(100*p.Reliability, 2), durationNs(p.LatencyNs)), Note: p.Source})
	}
	for _, s := range r.Stats {
		v.Streams = append(v.Streams, buildStreamView(r, s))
	}
	v.Daily = dailyGrid(r)
	v.Events = eventGrid(r)
	v.Notes = r.Notes
	return v
}

func buildStreamView(r *model.MonitorReport, s model.StreamReport) monitorStreamView {
	name := streamName(r, s.Stream)
	sv := monitorStreamView{Name: name, Key: "stream-" + strconv.Itoa(int(s.Stream))}
	lossPct := 0.0
	if s.Sent > 0 {
		lossPct = 100 * float64(s.Lost) / float64(s.Sent)
	}
	sd := s.RTT.SDNs / 1e6
	sv.Summary = grid{Title: "Statistics of the RTT (seed 001 Table 19)", Head: []string{"metric", "value"}, right: []bool{false, true}}
	add := func(k, val string) { sv.Summary.Rows = append(sv.Summary.Rows, []string{k, val}) }
	add("probes sent", num(s.Sent))
	add("probes lost", num(s.Lost))
	add("of them late", num(s.Late))
	add("packet loss", FormatPct(lossPct, 3))
	add("median RTT", FormatMs(float64(s.RTT.P50Ns)/1e6))
	add("mean RTT", FormatMs(s.RTT.MeanNs/1e6))
	add("SD of RTT", FormatMs(sd))
	add("variance of RTT", fixed(sd*sd, 1)+" ms²")
	add("idle baseline", FormatMs(float64(s.IdleBaselineNs)/1e6))

	sv.Delay = grid{Title: "Delay (ms)", Head: []string{"", "n", "mean", "SD", "min", "p1", "p5", "p25", "p50", "p75", "p95", "p99", "p99.9", "max"},
		right: []bool{false, true, true, true, true, true, true, true, true, true, true, true, true, true}}
	delay := func(label string, d *model.DelayStats) {
		if d == nil || d.N == 0 {
			return
		}
		if d.Approx {
			label += " ≈"
		}
		row := []string{label, num(d.N), nsMs(d.MeanNs), nsMs(d.SDNs)}
		for _, p := range []int64{d.MinNs, d.P1Ns, d.P5Ns, d.P25Ns, d.P50Ns, d.P75Ns, d.P95Ns, d.P99Ns, d.P999Ns, d.MaxNs} {
			row = append(row, nsMs(float64(p)))
		}
		sv.Delay.Rows = append(sv.Delay.Rows, row)
	}
	delay("RTT", &s.RTT)
	delay("forward", s.Fwd)
	delay("reverse", s.Rev)

	sv.Rel = grid{Title: "Reliability for latency requirements (seed 001 Table 20), R(L) % with 95 % interval", Head: []string{"requirement", "R(L)", "95 % interval", "ok", "sent"}}
	for _, l := range s.ByLoad {
		sv.Rel.Head = append(sv.Rel.Head, l.Load+" ("+num(l.Sent)+")")
	}
	for k, f := range s.Reliability {
		row := []string{durationNs(f.LNs), pctR(f.R), pctR(f.Lower) + "–" + pctR(f.Upper), num(f.OK), num(f.Sent)}
		for _, l := range s.ByLoad {
			if k < len(l.Reliability) {
				row = append(row, pctR(l.Reliability[k].R))
			}
		}
		sv.Rel.Rows = append(sv.Rel.Rows, row)
	}
	sv.Rel.right = rightFrom(len(sv.Rel.Head), 1)

	sv.Windows = grid{Title: "Worst sliding windows (stride 1 min), R(L) %", Head: []string{"window", "requirement", "worst R", "95 % interval", "worst from (UTC)", "windows", "p1", "p5", "p50"},
		right: []bool{false, false, true, true, false, true, true, true, true}}
	for _, w := range s.Windows {
		if w.Windows == 0 {
			continue
		}
		sv.Windows.Rows = append(sv.Windows.Rows, []string{durationNs(w.WindowNs), durationNs(w.LNs), pctR(w.Worst.R),
			pctR(w.Worst.Lower) + "–" + pctR(w.Worst.Upper), utc(w.WorstStartNs), strconv.Itoa(w.Windows), pctR(w.P1), pctR(w.P5), pctR(w.P50)})
	}

	sv.Verdict = grid{Title: "Requirement profiles", Head: []string{"profile", "over", "verdict", "pass", "fail", "insufficient", "worst R"},
		right: []bool{false, false, false, true, true, true, true}}
	for _, pv := range s.Verdicts {
		over := "whole range"
		if pv.WindowNs > 0 {
			over = durationNs(pv.WindowNs) + " windows"
		}
		sv.Verdict.Rows = append(sv.Verdict.Rows, []string{pv.Profile, over, pv.Verdict, strconv.Itoa(pv.Pass), strconv.Itoa(pv.Fail), strconv.Itoa(pv.Insufficient), pctR(pv.WorstR)})
	}
	return sv
}

func rightFrom(n, from int) []bool {
	r := make([]bool, n)
	for i := from; i < n; i++ {
		r[i] = true
	}
	return r
}

func dailyGrid(r *model.MonitorReport) grid {
	g := grid{Title: "Per day (UTC; median and p99 from histogram bins, within 1 %)", Head: []string{"day", "stream", "sent", "lost", "loss %", "median ms", "mean ms", "SD ms", "p99 ms"}}
	var ls []int64
	if len(r.Daily) > 0 {
		for _, f := range r.Daily[0].Reliability {
			ls = append(ls, f.LNs)
			g.Head = append(g.Head, "R("+durationNs(f.LNs)+") %")
		}
	}
	for _, d := range r.Daily {
		loss := 0.0
		if d.Sent > 0 {
			loss = 100 * float64(d.Lost) / float64(d.Sent)
		}
		row := []string{time.Unix(0, d.DayNs).UTC().Format("2006-01-02"), streamName(r, d.Stream), num(d.Sent), num(d.Lost), fixed(loss, 3),
			nsMs(float64(d.P50Ns)), nsMs(d.MeanNs), nsMs(d.SDNs), nsMs(float64(d.P99Ns))}
		for k := range ls {
			if k < len(d.Reliability) {
				row = append(row, pctR(d.Reliability[k].R))
			}
		}
		g.Rows = append(g.Rows, row)
	}
	g.right = rightFrom(len(g.Head), 2)
	return g
}

func eventGrid(r *model.MonitorReport) grid {
	g := grid{Title: "Events", Head: []string{"start (UTC)", "duration", "kind", "stream", "what", "flags"}, right: []bool{false, true}}
	for _, e := range r.Events {
		g.Rows = append(g.Rows, []string{utc(e.StartNs), FormatDuration(float64(e.EndNs-e.StartNs) / 1e9), string(e.Kind),
			streamName(r, e.Stream), e.Text, strings.Join(e.Flags, ",")})
	}
	return g
}

// writeTitled writes a text report's title and its header rows as an
// indented key-value table (a note in parentheses after its value).
func writeTitled(b *strings.Builder, title string, header []row) {
	b.WriteString(title + "\n")
	kv := &table{indent: "  "}
	for _, h := range header {
		val := h.Value
		if h.Note != "" {
			val += " (" + h.Note + ")"
		}
		kv.row(h.Label, val)
	}
	_ = kv.write(b) // a strings.Builder never fails
}

// WriteMonitorText writes the monitor report as text.
func WriteMonitorText(w io.Writer, r *model.MonitorReport) error {
	if r == nil {
		return fmt.Errorf("report: no monitor report")
	}
	v := buildMonitorView(r)
	var b strings.Builder
	writeTitled(&b, v.Title, v.Header)
	section := func(g grid, indent string) {
		if len(g.Rows) == 0 {
			return
		}
		b.WriteString("\n" + indent + g.Title + "\n")
		_ = g.table(indent + "  ").write(&b) // a strings.Builder never fails
	}
	for _, s := range v.Streams {
		b.WriteString("\nStream " + s.Name + "\n")
		section(s.Summary, "  ")
		section(s.Delay, "  ")
		section(s.Rel, "  ")
		section(s.Windows, "  ")
		section(s.Verdict, "  ")
	}
	section(v.Daily, "")
	if len(v.Events.Rows) == 0 {
		b.WriteString("\nEvents: none\n")
	} else {
		section(v.Events, "")
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

// WriteMonitorCSV writes one row per stream and threshold: R(L) over the
// range with its interval, the worst window of each length, and R(L) per
// load state.
func WriteMonitorCSV(w io.Writer, r *model.MonitorReport) error {
	t := &table{}
	head := []string{"stream", "target", "kind", "dscp", "threshold_ms", "sent", "lost", "late", "ok", "r", "lower", "upper"}
	var wins []int64
	seen := map[int64]bool{}
	for _, s := range r.Stats {
		for _, wr := range s.Windows {
			if !seen[wr.WindowNs] {
				seen[wr.WindowNs] = true
				wins = append(wins, wr.WindowNs)
			}
		}
	}
	for _, wn := range wins {
		m := strconv.FormatInt(wn/60e9, 10)
		head = append(head, "worst_r_"+m+"min", "worst_start_"+m+"min")
	}
	for _, ls := range model.LoadStates {
		head = append(head, "r_"+ls.String())
	}
	t.row(head...)
	for _, s := range r.Stats {
		var st model.MonitorStream
		if int(s.Stream) < len(r.Streams) && s.Stream >= 0 {
			st = r.Streams[s.Stream]
		}
		for k, f := range s.Reliability {
			row := []string{streamName(r, s.Stream), st.Target, string(st.Kind), strconv.Itoa(st.DSCP), fixed(float64(f.LNs)/1e6, 3),
				num(s.Sent), num(s.Lost), num(s.Late), num(f.OK), fixed(f.R, 6), fixed(f.Lower, 6), fixed(f.Upper, 6)}
			for _, wn := range wins {
				cells := []string{"", ""}
				for _, wr := range s.Windows {
					if wr.WindowNs == wn && wr.LNs == f.LNs && wr.Windows > 0 {
						cells = []string{fixed(wr.Worst.R, 6), time.Unix(0, wr.WorstStartNs).UTC().Format(time.RFC3339)}
					}
				}
				row = append(row, cells...)
			}
			for _, ls := range model.LoadStates {
				cell := ""
				for _, l := range s.ByLoad {
					if l.Load == ls.String() && k < len(l.Reliability) {
						cell = fixed(l.Reliability[k].R, 6)
					}
				}
				row = append(row, cell)
			}
			t.row(row...)
		}
	}
	return t.writeCSV(w)
}

// WriteMonitorSeriesCSV writes the time series: one row per stream and
// bucket (the report's bucket length, whole minutes).
func WriteMonitorSeriesCSV(w io.Writer, r *model.MonitorReport) error {
	t := &table{}
	t.row("stream", "start", "bucket_s", "sent", "lost", "loss_pct", "p50_ms", "p99_ms")
	for _, s := range r.Series {
		for _, p := range s.Points {
			loss := 0.0
			if p.Sent > 0 {
				loss = 100 * float64(p.Lost) / float64(p.Sent)
			}
			t.row(streamName(r, s.Stream), time.Unix(0, p.StartNs).UTC().Format(time.RFC3339), strconv.FormatInt(s.BucketNs/1e9, 10),
				strconv.FormatUint(uint64(p.Sent), 10), strconv.FormatUint(uint64(p.Lost), 10), fixed(loss, 3),
				fixed(float64(p.P50Ns)/1e6, 3), fixed(float64(p.P99Ns)/1e6, 3))
		}
	}
	return t.writeCSV(w)
}

// monitorHeadlines are the figures `sonde report A B` compares.
func monitorHeadlines(r *model.MonitorReport) []headline {
	var hs []headline
	for _, s := range r.Stats {
		name := streamName(r, s.Stream) + " "
		hs = append(hs, headline{name + "RTT median", "ms", float64(s.RTT.P50Ns) / 1e6}, headline{name + "RTT p99", "ms", float64(s.RTT.P99Ns) / 1e6})
		if s.Sent > 0 {
			hs = append(hs, headline{name + "loss", "%", 100 * float64(s.Lost) / float64(s.Sent)})
		}
		for _, f := range s.Reliability {
			hs = append(hs, headline{name + "R(" + durationNs(f.LNs) + ")", "%", 100 * f.R})
		}
	}
	return hs
}
