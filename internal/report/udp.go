package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// histBars draws a histogram as an inline SVG bar chart.
func histBars(h []model.HistBin) template.HTML {
	if len(h) == 0 {
		return ""
	}
	peak := 1
	for _, b := range h {
		peak = max(peak, b.Count)
	}
	const w, ht = 600, 120
	bw := float64(w) / float64(len(h))
	var s strings.Builder
	fmt.Fprintf(&s, `<svg width="%d" height="%d" role="img">`, w, ht+16)
	for i, b := range h {
		bh := float64(ht) * float64(b.Count) / float64(peak)
		fmt.Fprintf(&s, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4a7"><title>%.3f–%.3f: %d</title></rect>`,
			float64(i)*bw, float64(ht)-bh, bw*0.9, bh, b.Lo, b.Hi, b.Count)
	}
	fmt.Fprintf(&s, `<text x="0" y="%d" font-size="11">%.3f</text><text x="%d" y="%d" font-size="11" text-anchor="end">%.3f</text></svg>`,
		ht+14, h[0].Lo, w, ht+14, h[len(h)-1].Hi)
	return template.HTML(s.String())
}

type udpFlowView struct {
	model.UDPFlow
	Delay, Loss [][]string
	Histogram   template.HTML
}

type udpPage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors, Notes                 []string
	Flows                         []udpFlowView
	DelayHead, LossHead           []string
}

var udpTemplate = newPage("udp", udpHTML)

const udpHTML = `{{template "top" .}}{{$p := .}}{{range .Flows}}<section><h2>{{.Name}} (DSCP {{.DSCP}}, ECN {{.ECN}})</h2>
<p class="sub">reflector {{.ReflectorAddr}}, sent {{.Sent}}, replies {{.Replies}}{{if .ReflectorFormat}}, reflector format {{.ReflectorFormat}}{{end}}{{range .UnparsedReplies}}; {{.Count}} unparsed replies of {{.Bytes}} bytes ({{.Reason}}){{end}}{{if .Clock.SharedClock}}; shared clock: one-way delays measured{{else}}; clock offset {{printf "%.3f" .Clock.OffsetMs}} ± {{printf "%.3f" .Clock.UncertaintyMs}} ms: one-way delays estimated{{end}}</p>
{{template "grid" (arr $p.DelayHead .Delay)}}
{{template "grid" (arr $p.LossHead .Loss)}}
{{if .Histogram}}<h3>RTT histogram (ms)</h3>{{.Histogram}}{{end}}
{{if .Voice}}<p>Voice: MOS {{printf "%.2f" .Voice.MOS}} (R {{printf "%.1f" .Voice.R}}): {{.Voice.Assumption}}</p>{{end}}
{{if .Errors}}<ul class="list">{{range .Errors}}<li>error: {{.}}</li>{{end}}</ul>{{end}}</section>
{{end}}{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`

// WriteUDPHTML writes the self-contained report of a `sonde udp` run, in
// the shell of every report.
func WriteUDPHTML(w io.Writer, res *model.UDPResult) error {
	return render(w, udpTemplate, buildUDPPage(res), "udp html")
}

func buildUDPPage(res *model.UDPResult) udpPage {
	p := udpPage{Kind: "sonde udp report", Title: "sonde udp",
		DelayHead: []string{"", "min", "p50", "p90", "p99", "max", "n"},
		LossHead:  []string{"direction", "loss", "late", "dup", "jitter ms", "reordered %", "loss periods"}}
	if res == nil {
		p.Errors = []string{"no result"}
		return p
	}
	p.Schema, p.Errors, p.Notes = res.Schema, res.Errors, res.Notes
	p.Subtitle = fmt.Sprintf("%s · %s · interval %s · %d bytes · %.1f s", res.Config.Server, res.Start.Format(time.RFC3339),
		time.Duration(res.Config.IntervalUs*1e3), res.Config.PacketBytes, res.Config.DurationS)
	for _, f := range res.Flows {
		prefix := ""
		if len(res.Flows) > 1 {
			prefix = f.Name + " "
		}
		if f.RTTMs.N > 0 {
			p.Cards = append(p.Cards, card{Label: prefix + "RTT median", Value: FormatMs(f.RTTMs.P50), Sub: "p99 " + FormatMs(f.RTTMs.P99)})
		}
		for _, d := range []model.UDPDirectionStats{f.Forward, f.Backward} {
			p.Cards = append(p.Cards, card{Label: prefix + d.Direction + " loss", Value: FormatPct(d.LossPct, 2),
				Sub: fmt.Sprintf("jitter %.3f ms", d.JitterMs)})
		}
		if v := f.Voice; v != nil {
			p.Cards = append(p.Cards, card{Label: prefix + "MOS", Value: fmt.Sprintf("%.2f", v.MOS)})
		}
		fv := udpFlowView{UDPFlow: f, Histogram: histBars(f.RTTHistogram)}
		fv.Delay = append(fv.Delay, statsCells("RTT ms", f.RTTMs))
		for _, d := range []model.UDPDirectionStats{f.Forward, f.Backward} {
			fv.Delay = append(fv.Delay, statsCells(d.Direction+" OWD ms", d.OWDMs))
			fv.Loss = append(fv.Loss, []string{d.Direction, fmt.Sprintf("%d/%d", d.Lost, d.Sent), num(d.Late), num(d.Duplicates),
				fixed(d.JitterMs, 3), fixed(d.Reordering.RatioPct, 2), num(d.LossPattern.Periods)})
		}
		p.Flows = append(p.Flows, fv)
	}
	return p
}

func statsCells(label string, s model.Stats) []string {
	return []string{label, fixed(s.Min, 3), fixed(s.P50, 3), fixed(s.P90, 3), fixed(s.P99, 3), fixed(s.Max, 3), num(s.N)}
}

// WriteUDPText prints the summary of a UDP run.
func WriteUDPText(w io.Writer, res *model.UDPResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sonde udp %s  %s  interval %s  %d bytes  %.1f s\n", res.Config.Server, res.Start.Format(time.RFC3339),
		time.Duration(res.Config.IntervalUs*1e3), res.Config.PacketBytes, res.Config.DurationS)
	for _, f := range res.Flows {
		fmt.Fprintf(&b, "\nflow %s  DSCP %d ECN %d  reflector %s  sent %d  replies %d\n", f.Name, f.DSCP, f.ECN, f.ReflectorAddr, f.Sent, f.Replies)
		if f.ReflectorFormat != "" {
			fmt.Fprintf(&b, "  reflector       %s\n", formatLine(f.ReflectorFormat))
		}
		for _, u := range f.UnparsedReplies {
			fmt.Fprintf(&b, "  unparsed        %s\n", unparsedLine(u))
		}
		if f.RTTMs.N > 0 {
			fmt.Fprintf(&b, "  RTT             %s\n", statsLine(f.RTTMs, "ms"))
		}
		switch {
		case f.Clock.SharedClock:
			b.WriteString("  clock           shared with the reflector: one-way delays measured\n")
		case f.Clock.Samples > 0:
			fmt.Fprintf(&b, "  clock           offset %+.3f ms ± %.3f ms, drift %+.1f ppm: one-way delays are estimates\n",
				f.Clock.OffsetMs, f.Clock.UncertaintyMs, f.Clock.DriftPPM)
		}
		for _, d := range []model.UDPDirectionStats{f.Forward, f.Backward} {
			fmt.Fprintf(&b, "  %-8s OWD     %s\n", d.Direction, statsLine(d.OWDMs, "ms"))
			fmt.Fprintf(&b, "           jitter  %.3f ms (RFC 3550)  |IPDV| p50 %.3f p99 %.3f ms  PDV p99 %.3f ms\n",
				d.JitterMs, d.IPDVAbsMs.P50, d.IPDVAbsMs.P99, d.PDVMs.P99)
			known := ""
			if !d.Known {
				known = " (round trip: reflector report missing)"
			}
			fmt.Fprintf(&b, "           loss    %d of %d (%.2f%%)%s  late %d  duplicates %d  reordered %.2f%% (max extent %d)\n",
				d.Lost, d.Sent, d.LossPct, known, d.Late, d.Duplicates, d.Reordering.RatioPct, d.Reordering.MaxExtent)
			if lp := d.LossPattern; lp.Periods > 0 {
				fmt.Fprintf(&b, "           loss periods %d, length mean %.2f max %.0f, gap mean %.1f packets\n",
					lp.Periods, lp.PeriodLength.Mean, lp.PeriodLength.Max, lp.InterPeriodLength.Mean)
			}
		}
		if m := f.Marks; m != nil {
			fmt.Fprintf(&b, "  marks           sent DSCP %d ECN %d; %s; %s\n", m.SentDSCP, m.SentECN,
				markLine("at reflector", m.AtReflectorDSCP, m.AtReflectorECN, m.ForwardOK),
				markLine("at client", m.AtClientDSCP, m.AtClientECN, m.BackwardOK))
		}
		if f.ScheduleErrorUs.N > 0 {
			fmt.Fprintf(&b, "  send schedule   error p50 %.1f µs, p99 %.1f µs, max %.1f µs\n", f.ScheduleErrorUs.P50, f.ScheduleErrorUs.P99, f.ScheduleErrorUs.Max)
		}
		if v := f.Voice; v != nil {
			fmt.Fprintf(&b, "  voice           MOS %.2f (R %.1f; %s, delay %.1f ms, loss %.2f%%)\n", v.MOS, v.R, v.Codec, v.DelayMs, v.LossPct)
		}
		for _, e := range f.Errors {
			fmt.Fprintf(&b, "  error: %s\n", e)
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatLine explains a flow's reflector format.
func formatLine(format string) string {
	switch format {
	case "stamp":
		return "speaks STAMP (RFC 8762)"
	case "twamp-light":
		return "speaks TWAMP-Light (RFC 5357 §4.2.1): no TLVs, so the marks it received are unknown"
	case "stamp-or-twamp-light":
		return "speaks STAMP or TWAMP-Light (44-byte replies read the same in both)"
	case "mixed":
		return "answered in both STAMP and TWAMP-Light formats"
	}
	return format
}

// unparsedLine says what a kind of unreadable reply was.
func unparsedLine(u model.UnparsedReplies) string {
	if u.Bytes == 0 {
		return fmt.Sprintf("%d more replies of other sizes, not STAMP or TWAMP-Light", u.Count)
	}
	return fmt.Sprintf("%d replies of %d bytes, not STAMP or TWAMP-Light (%s)", u.Count, u.Bytes, u.Reason)
}

func statsLine(s model.Stats, unit string) string {
	if s.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("min %.3f  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f %s  (n %d)", s.Min, s.P50, s.P90, s.P99, s.Max, unit, s.N)
}

func markLine(where string, dscp, ecn *int, ok *bool) string {
	if dscp == nil {
		return where + " unknown"
	}
	verdict := "unchanged"
	if ok != nil && !*ok {
		verdict = "CHANGED"
	}
	return fmt.Sprintf("%s DSCP %d ECN %d %s", where, *dscp, *ecn, verdict)
}
