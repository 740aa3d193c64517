package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// The MBM renderers (`sonde mbm`, docs/mbm.md): a run's target, model and
// SPRT, and per test its verdict, counts and the sender's conformance.

// WriteMBMText writes a run's summary: one line per test, then each test's
// details.
func WriteMBMText(w io.Writer, r *model.MBMResult) error {
	var b strings.Builder
	title := "MBM (RFC 8337)"
	if r.Plan {
		title += ": plan, nothing sent"
	}
	if r.Subpath != "" {
		title += ", subpath " + r.Subpath
	}
	fmt.Fprintln(&b, title)
	for _, l := range mbmHeader(r) {
		fmt.Fprintf(&b, "%-13s %s\n", l.Label, l.Value)
	}
	if len(r.Tests) > 0 {
		b.WriteString("\n")
		t := table{right: []bool{false, false, false, true, true, true, false}}
		t.row("test", "transport", "verdict", "packets", "marks", "loss", "95 % interval")
		for _, x := range r.Tests {
			t.row(x.ID, x.Transport, string(x.Verdict), n64(x.Packets), n64(x.Marks), fmt.Sprintf("%.3g", x.Loss), fmt.Sprintf("%.3g to %.3g", x.LossLow, x.LossHigh))
		}
		if err := t.write(&b); err != nil {
			return err
		}
		for _, x := range r.Tests {
			fmt.Fprintf(&b, "\n%s %s (%s): %s\n", x.ID, x.Name, x.Transport, x.Verdict)
			for _, l := range mbmTestRows(x) {
				fmt.Fprintf(&b, "  %-18s %s\n", l.Label, l.Value)
			}
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "error: %s\n", e)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mbmHeader(r *model.MBMResult) []row {
	m, s := r.Model, r.SPRT
	rows := []row{{Label: "target", Value: fmt.Sprintf("%s, RTT %g ms, MTU %d B", units.FormatRate(r.Target.RateBps), r.Target.RTTMs, r.Target.MTUBytes)}}
	rows = append(rows, mbmLabRows(r)...)
	rows = append(rows, []row{
		{Label: "model", Value: fmt.Sprintf("W %d packets, R %.6g (%s), p0 %.4g, p1 %.4g", m.WindowPackets, m.RunLengthPackets, m.RunLengthModel, m.P0, m.P1)},
		{Label: "SPRT", Value: fmt.Sprintf("α %g, β %g, floor %d, truncation %d packets", s.Alpha, s.Beta, s.FloorPackets, s.MaxPackets)},
	}...)
	if !r.Start.IsZero() {
		rows = append(rows, row{Label: "run", Value: r.Start.UTC().Format(time.RFC3339) + " to " + r.End.UTC().Format(time.RFC3339)})
	}
	return rows
}

// mbmLabRows are, for a run across a lab (sonde mbm --lab), its profile
// and the configured path beside the target: the client → server
// direction carries the tests' packets, the other their feedback and
// acks.
func mbmLabRows(r *model.MBMResult) []row {
	t := r.Truth
	if t == nil {
		if r.Env != nil && r.Env.LabProfile != "" {
			return []row{{Label: "lab", Value: "profile " + strconv.Quote(r.Env.LabProfile)}}
		}
		return nil
	}
	v := fmt.Sprintf("profile %s, base RTT %s", strconv.Quote(t.Profile), FormatMs(t.BaseRTTMs))
	if t.MTU > 0 {
		v += fmt.Sprintf(", MTU %d B", t.MTU)
	}
	return []row{{Label: "lab", Value: v},
		{Label: "lab up", Value: labDirection(t.UpRateBps, t.UpLoss, t.UpQueueBytes, t.UpQueuePackets, t.UpQdisc) + " (client → server: the tests' packets)"},
		{Label: "lab down", Value: labDirection(t.DownRateBps, t.DownLoss, t.DownQueueBytes, t.DownQueuePackets, t.DownQdisc) + " (server → client: feedback, acks)"},
	}
}

// labDirection is one direction of a lab's configured bottleneck: rate,
// loss, queue limit and discipline.
func labDirection(rateBps, loss float64, queueBytes, queuePackets int, qdisc string) string {
	v := "no rate limit"
	if rateBps > 0 && finite(rateBps) {
		v = units.FormatRate(rateBps)
	}
	v += ", loss " + lossPct(loss)
	switch {
	case queuePackets > 0:
		v += fmt.Sprintf(", queue %d packets", queuePackets)
	case queueBytes > 0:
		v += ", queue " + units.FormatBytes(float64(queueBytes))
		if rateBps > 0 && finite(rateBps) {
			v += " (" + FormatMs(float64(queueBytes)*8/rateBps*1e3) + " at the rate)"
		}
	}
	if qdisc != "" {
		v += ", " + qdisc
	}
	return v
}

// mbmTestRows are a test's details, for the text and the HTML.
func mbmTestRows(x model.MBMTest) []row {
	rows := []row{{Label: "reason", Value: x.Reason, Level: verdictLevel(x.Verdict)}}
	rows = append(rows, row{Label: "counted", Value: fmt.Sprintf("%d packets, %d marks (%d lost, %d CE)", x.Packets, x.Marks, x.Losses, x.CE)})
	u := x.UDP
	if u == nil {
		u = &model.MBMUDP{} // a TCP test or an older result: no UDP rows
	}
	if u.DecisionPackets > 0 {
		rows = append(rows, row{Label: "SPRT decided at", Value: n64(u.DecisionPackets) + " packets"})
	}
	if u.Pattern != "" {
		rows = append(rows, row{Label: "pattern", Value: u.Pattern})
	}
	if u.PacketsSent > 0 {
		rows = append(rows, row{Label: "sent", Value: fmt.Sprintf("%d packets (%d of growth) in %s", u.PacketsSent, u.GrowthPackets, FormatDuration(u.DurationMs/1e3))})
	}
	if u.SenderRateBps > 0 {
		rows = append(rows, row{Label: "sender rate", Value: fmt.Sprintf("%s mean, %s least over %.0f ms", units.FormatRate(u.SenderRateBps), units.FormatRate(u.SenderMinRateBps), u.RateWindowMs)})
	}
	if u.ReceiverRateBps > 0 {
		rows = append(rows, row{Label: "receiver rate", Value: fmt.Sprintf("%s mean, %s least", units.FormatRate(u.ReceiverRateBps), units.FormatRate(u.ReceiverMinRateBps))})
	}
	if u.Deadlines > 0 {
		rows = append(rows, row{Label: "schedule", Value: fmt.Sprintf("%d deadlines, %d missed; error p50 %g µs, p99 %g µs, max %.0f µs", u.Deadlines, u.MissedDeadlines, u.ScheduleErrorP50Us, u.ScheduleErrorP99Us, u.ScheduleErrorMaxUs)})
	}
	if sc := u.Scan; sc != nil {
		v := fmt.Sprintf("base RTT %.2f ms", sc.BaseRTTMs)
		if sc.OnsetWindow > 0 {
			v += fmt.Sprintf(", a standing queue above window %d (capacity %s)", sc.OnsetWindow, units.FormatRate(sc.CapacityBps))
		}
		if sc.FirstMarkPacket >= 0 {
			v += fmt.Sprintf(", first loss or mark at window %d with %.1f ms (%.0f packets) queued", sc.FirstMarkWindow, sc.QueueAtMarkMs, sc.QueueAtMarkPackets)
		} else {
			v += fmt.Sprintf(", no loss or mark, at most %.1f ms queued", sc.QueueAtMarkMs)
		}
		v += fmt.Sprintf("; window refills %d, %d later than %.1f ms (max %.1f ms)", sc.Refills, sc.LateRefills, sc.RefillLimitMs, sc.MaxRefillLagMs)
		rows = append(rows, row{Label: "scan", Value: v + "; stopped: " + sc.Stop})
	}
	if a := u.AQM; a != nil {
		for i, rd := range a.Rounds {
			rows = append(rows, row{Label: fmt.Sprintf("round %d", i+1), Value: fmt.Sprintf("%d packets, %d delivered before the first mark, %d lost, %d CE, RTT max %.1f ms, queued %.1f ms after the mark",
				rd.Packets, rd.DeliveredBeforeMark, rd.Losses, rd.CE, rd.MaxRTTMs, rd.SojournAfterMarkMs)})
		}
	}
	if u.Reordered+u.Duplicates+u.Late+u.FeedbackGaps+u.SendErrors > 0 {
		rows = append(rows, row{Label: "also", Value: fmt.Sprintf("%d reordered, %d duplicates, %d late, %d feedback gaps, %d send errors", u.Reordered, u.Duplicates, u.Late, u.FeedbackGaps, u.SendErrors)})
	}
	if x.TCP != nil {
		rows = append(rows, mbmTCPRows(x.TCP)...)
	}
	return rows
}

// mbmTCPRows are a TCP test's sender figures and, for 8.1.2, the
// window's readback from both ends.
func mbmTCPRows(tc *model.MBMTCP) []row {
	sender := fmt.Sprintf("%s, MSS %d B, ", tc.CongestionControl, tc.MSS)
	if tc.PacingRateBps > 0 {
		sender += "paced at " + units.FormatRate(tc.PacingRateBps)
	} else {
		sender += "unpaced"
	}
	rows := []row{{Label: "sender", Value: sender},
		{Label: "periods", Value: fmt.Sprintf("growth %.2f s, test %.2f s; goodput %s, least %s over %g s", tc.GrowthS, tc.TestS,
			units.FormatRate(tc.GoodputBps), units.FormatRate(tc.MinWindowRateBps), tc.WindowS)},
		{Label: "TCP_INFO", Value: fmt.Sprintf("%d delivered, %d retransmitted, %d DSACK duplicates, %d CE; %d samples every %.1f ms", tc.Delivered, tc.Retrans, tc.DSACKDups, tc.CE, tc.Samples, tc.SampleIntervalMs)},
	}
	if tc.BurstPackets > 0 {
		rows = append(rows, row{Label: "bursts", Value: fmt.Sprintf("%d packets every %.1f ms; %d written, %d headways missed, %.0f %% with the window open for the whole burst (on-the-wire shape not observed)",
			tc.BurstPackets, tc.HeadwayMs, tc.Writes, tc.MissedHeadways, tc.WholeBurstsPct)})
	}
	if tc.WindowPackets > 0 {
		rows = append(rows, row{Label: "window", Value: fmt.Sprintf("W %d packets, %d B asked of the receiver; SO_RCVBUF %d set, %d held (attempt %d)",
			tc.WindowPackets, tc.ReceiveWindowBytes, tc.ReceiveBufferSetBytes, tc.ReceiveBufferBytes, tc.WindowAttempts)})
		v := fmt.Sprintf("sender: up to %d B advertised (tcpi_snd_wnd), %d packets in flight (W + %d allowed)", tc.MaxSndWndBytes, tc.MaxInFlight, tc.WindowSlackPackets)
		if tc.ServerMaxRcvWndBytes > 0 || tc.ServerBytes > 0 {
			v += fmt.Sprintf("; server: up to %d B advertised (tcpi_rcv_wnd), rcv_space %d B, window clamp %d B, %d B received",
				tc.ServerMaxRcvWndBytes, tc.ServerRcvSpaceBytes, tc.ServerWindowClampBytes, tc.ServerBytes)
		}
		rows = append(rows, row{Label: "window readback", Value: v})
		if tc.RTTSpans > 0 {
			rows = append(rows, row{Label: "per RTT", Value: fmt.Sprintf("%.1f packets delivered per RTT over %d spans, %.0f %% of spans below W − %d",
				tc.DeliveredPerRTT, tc.RTTSpans, tc.ShortRTTPct, tc.WindowSlackPackets)})
		}
	}
	return rows
}

func verdictLevel(v model.MBMVerdict) string {
	switch v {
	case model.MBMPass:
		return levelOK
	case model.MBMFail, model.MBMError:
		return levelBad
	}
	return levelWarn
}

type mbmPage struct {
	Kind, Title, Subtitle, Schema string
	Cards                         []card
	Errors                        []string
	Header                        []row
	Tests                         []mbmTestView
	Notes                         []string
}

type mbmTestView struct {
	Title, Verdict, Level string
	Rows                  []row
}

var mbmTemplate = newPage("mbm", mbmHTML)

const mbmHTML = `{{template "top" .}}<section><h2>Target and model</h2>{{template "rows" .Header}}</section>
{{range .Tests}}<section><h2>{{.Title}}</h2><p class="verdict {{.Level}}">{{.Verdict}}</p>{{template "rows" .Rows}}</section>
{{end}}{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`

// WriteMBMHTML writes the self-contained HTML report of a run.
func WriteMBMHTML(w io.Writer, r *model.MBMResult) error {
	p := mbmPage{Kind: "sonde mbm", Title: "sonde mbm (RFC 8337)", Schema: r.Schema, Errors: r.Errors, Notes: r.Notes, Header: mbmHeader(r)}
	p.Subtitle = fmt.Sprintf("target %s at RTT %g ms", units.FormatRate(r.Target.RateBps), r.Target.RTTMs)
	if r.Subpath != "" {
		p.Subtitle += ", subpath " + r.Subpath
	}
	for _, x := range r.Tests {
		p.Cards = append(p.Cards, card{Label: x.ID + " " + x.Name, Value: string(x.Verdict), Sub: fmt.Sprintf("%d packets, %d marks", x.Packets, x.Marks), Level: verdictLevel(x.Verdict)})
		p.Tests = append(p.Tests, mbmTestView{Title: x.ID + " " + x.Name + " (" + x.Transport + ")", Verdict: string(x.Verdict), Level: verdictLevel(x.Verdict), Rows: mbmTestRows(x)})
	}
	return render(w, mbmTemplate, p, "mbm html")
}

// WriteMBMCSV writes one row per test.
func WriteMBMCSV(w io.Writer, r *model.MBMResult) error {
	t := table{}
	t.row("id", "name", "transport", "verdict", "reason", "packets", "marks", "losses", "ce", "loss", "loss_low", "loss_high",
		"decision_packets", "packets_sent", "sender_min_rate_bps", "receiver_min_rate_bps", "schedule_error_p50_us", "schedule_error_p99_us", "missed_deadlines", "reordered",
		// A TCP test's own figures (empty columns for a UDP test, and
		// the UDP ones above for a TCP test: 0).
		"congestion_control", "goodput_bps", "min_window_rate_bps", "retrans", "dsack_dups", "max_in_flight", "max_snd_wnd_bytes", "delivered_per_rtt")
	for _, x := range r.Tests {
		u := x.UDP
		if u == nil {
			u = &model.MBMUDP{}
		}
		row := []string{x.ID, x.Name, x.Transport, string(x.Verdict), x.Reason, n64(x.Packets), n64(x.Marks), n64(x.Losses), n64(x.CE),
			fmt.Sprint(x.Loss), fmt.Sprint(x.LossLow), fmt.Sprint(x.LossHigh), n64(u.DecisionPackets), n64(u.PacketsSent),
			fmt.Sprint(u.SenderMinRateBps), fmt.Sprint(u.ReceiverMinRateBps), fmt.Sprint(u.ScheduleErrorP50Us), fmt.Sprint(u.ScheduleErrorP99Us),
			n64(u.MissedDeadlines), n64(u.Reordered)}
		if c := x.TCP; c != nil {
			row = append(row, c.CongestionControl, fmt.Sprint(c.GoodputBps), fmt.Sprint(c.MinWindowRateBps), n64(c.Retrans), n64(c.DSACKDups),
				n64(c.MaxInFlight), n64(c.MaxSndWndBytes), fmt.Sprint(c.DeliveredPerRTT))
		} else {
			row = append(row, "", "", "", "", "", "", "", "")
		}
		t.row(row...)
	}
	return t.writeCSV(w)
}

// mbmHeadlines are the figures a comparison shows: per test, its marks
// and loss.
func mbmHeadlines(r *model.MBMResult) []headline {
	var h []headline
	for _, x := range r.Tests {
		h = append(h, headline{label: x.ID + " packets", v: float64(x.Packets)}, headline{label: x.ID + " loss", unit: "%", v: 100 * x.Loss})
	}
	return h
}

func n64(v int64) string { return strconv.FormatInt(v, 10) }
