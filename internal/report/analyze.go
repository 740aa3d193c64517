package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// AnalyzeOptions tune the `sonde analyze --html` report.
type AnalyzeOptions struct {
	// TopN is how many connections (by bytes) get their own charts
	// (default 5); the tables list every connection.
	TopN int
	// MaxRows bounds each table: TCP connections (the largest), QUIC
	// flows and HTTP requests (default 300).
	MaxRows int
}

// tseqMaxMarks bounds the data segments drawn in one time-sequence graph.
const tseqMaxMarks = 1500

type connCharts struct {
	Title  string
	Charts []figure
}

type analyzePage struct {
	Kind      string
	Title     string
	Subtitle  string
	Cards     []card
	Errors    []string
	Files     []row
	TCPHead   []string
	TCP       [][]string
	TCPNote   string
	QUICNote  string
	QUICHead  []string
	QUIC      [][]string
	Conns     []connCharts
	TruthHead []string
	Truth     [][]string
	TruthNote string
	Pages     [][]string
	PagesHead []string
	HTTPHead  []string
	HTTP      [][]string
	HTTPNote  string
	PagesNote string
	ReqHead   []string
	Reqs      [][]string
	ReqNote   string
	Waterfall []figure
	Notes     []string
	Schema    string
}

var analyzeTemplate = newPage("analyze", analyzeHTML)

// WriteAnalyzeHTML writes the self-contained report of a capture analysis:
// tables of every connection, and for the largest connections RTT over
// time per method (with ground truth when the samples carry it), goodput
// over time and a tcptrace-style time-sequence graph; the HTTP/1.x page
// loads, connections and requests with a waterfall. samples are the RTT
// samples (nil: no RTT charts).
func WriteAnalyzeHTML(w io.Writer, r *model.Analysis, samples []model.PassiveRTT, opt AnalyzeOptions) error {
	if opt.TopN <= 0 {
		opt.TopN = 5
	}
	if opt.MaxRows <= 0 {
		opt.MaxRows = 300
	}
	p := buildAnalyzePage(r, samples, opt)
	return render(w, analyzeTemplate, p, "analyze html")
}

func buildAnalyzePage(r *model.Analysis, samples []model.PassiveRTT, opt AnalyzeOptions) analyzePage {
	p := analyzePage{Kind: "sonde analyze report", Title: "sonde capture analysis"}
	if r == nil {
		p.Errors = []string{"no analysis"}
		return p
	}
	p.Schema, p.Errors, p.Notes = r.Schema, r.Errors, r.Notes
	var names []string
	for _, f := range r.Files {
		names = append(names, f.Path)
		v := fmt.Sprintf("%s, %d packets", f.Format, f.Packets)
		if f.DamageOffset >= 0 {
			v += fmt.Sprintf(", damaged at byte %d (%s): analysed up to there", f.DamageOffset, f.Damage)
		}
		p.Files = append(p.Files, row{Label: f.Path, Value: v})
	}
	p.Subtitle = strings.Join(names, ", ")
	p.Cards = []card{
		{Label: "packets", Value: strconv.FormatUint(r.Packets, 10), Sub: fmt.Sprintf("%d not analysed", r.Skipped)},
		{Label: "duration", Value: FormatDuration(r.DurationS)},
		{Label: "TCP connections", Value: strconv.Itoa(len(r.TCP))},
		{Label: "QUIC flows", Value: strconv.Itoa(len(r.QUIC))},
	}
	if len(r.HTTPPages) > 0 {
		p.Cards = append(p.Cards, card{Label: "HTTP page loads", Value: strconv.Itoa(len(r.HTTPPages))})
	}
	tcpTables(&p, r, opt.MaxRows)
	quicTable(&p, r, opt.MaxRows)
	connectionCharts(&p, r, samples, opt.TopN)
	truthTable(&p, r)
	httpTables(&p, r, opt.MaxRows)
	return p
}

func rttShort(s model.RTTSummary) string {
	if s.Samples == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s (%d)", msNumber(s.MinMs), msNumber(s.MedianMs), s.Samples)
}

// byBytes returns the TCP connections, largest (data bytes) first.
func byBytes(r *model.Analysis) []*model.TCPConn {
	tcp := make([]*model.TCPConn, 0, len(r.TCP))
	for i := range r.TCP {
		tcp = append(tcp, &r.TCP[i])
	}
	sort.SliceStable(tcp, func(i, j int) bool {
		return tcp[i].AB.DataBytes+tcp[i].BA.DataBytes > tcp[j].AB.DataBytes+tcp[j].BA.DataBytes
	})
	return tcp
}

func tcpTables(p *analyzePage, r *model.Analysis, maxRows int) {
	p.TCPHead = []string{"A > B", "dir", "start", "duration", "packets", "data", "goodput", "retrans", "ooo", "dup ACK",
		"zero wnd", "RTT side min / median (n)", "SEQ/ACK side", "TS full", "closed", "HTTP"}
	tcp := byBytes(r)
	if len(tcp) > maxRows {
		p.TCPNote = fmt.Sprintf("the %d largest of %d connections (all are in --json)", maxRows, len(tcp))
		tcp = tcp[:maxRows]
	}
	for _, c := range tcp {
		httpCell := ""
		if c.HTTP != nil {
			httpCell = fmt.Sprintf("%d req", c.HTTP.Requests)
		}
		closed := c.Closed
		if closed == "" {
			closed = "open"
		}
		for j, d := range []model.TCPDir{c.AB, c.BA} {
			row := []string{c.A + " > " + c.B, "A→B", FormatDuration(c.StartS), FormatDuration(c.DurationS)}
			side, sa, full := c.TSSideB, c.SeqAckSideB, rttShort(c.TSFull)
			if j == 1 {
				row = []string{"", "B→A", "", ""}
				side, sa, full, closed, httpCell = c.TSSideA, c.SeqAckSideA, "", "", ""
			}
			row = append(row, strconv.FormatUint(d.Packets, 10), units.FormatBytes(float64(d.DataBytes)), units.FormatRate(d.GoodputBps),
				strconv.FormatUint(d.Retransmissions, 10), strconv.FormatUint(d.OutOfOrder, 10), strconv.FormatUint(d.DupACKs, 10),
				strconv.FormatUint(d.ZeroWindows, 10), rttShort(side), rttShort(sa), full, closed, httpCell)
			p.TCP = append(p.TCP, row)
		}
	}
}

// spinCell is the flow's spin state, with each direction's when they
// differ (one side random, the other constant).
func spinCell(q model.QUICConn) string {
	if q.SpinDir[0] == q.SpinDir[1] || q.SpinDir[0] == "" {
		return q.Spin
	}
	return fmt.Sprintf("%s (c→s %s, s→c %s)", q.Spin, q.SpinDir[0], q.SpinDir[1])
}

func quicTable(p *analyzePage, r *model.Analysis, maxRows int) {
	p.QUICHead = []string{"client > server", "version", "packets c→s / s→c", "spin", "edges", "full RTT (c→s edges)",
		"full RTT (s→c edges)", "server side", "client side"}
	for i, q := range r.QUIC {
		if i == maxRows {
			p.QUICNote = fmt.Sprintf("the first %d of %d flows (all are in --json)", maxRows, len(r.QUIC))
			break
		}
		p.QUIC = append(p.QUIC, []string{q.Client + " > " + q.Server, q.Version, fmt.Sprintf("%d / %d", q.Packets[0], q.Packets[1]),
			spinCell(q), fmt.Sprintf("%d / %d", q.Edges[0], q.Edges[1]), rttShort(q.SpinRTT[0]), rttShort(q.SpinRTT[1]),
			rttShort(q.Component[0]), rttShort(q.Component[1])})
	}
}

func truthTable(p *analyzePage, r *model.Analysis) {
	t := r.Truth
	if t == nil {
		return
	}
	p.TruthNote = fmt.Sprintf("%s, observer at %s; |e| in %%", t.File, t.Observer)
	p.TruthHead = []string{"method", "samples", "matched", "mean", "stddev", "median", "p90", "p99", "max", "bias", "samples/s", "true RTT"}
	for _, m := range t.Methods {
		p.Truth = append(p.Truth, []string{m.Method, strconv.Itoa(m.Samples), strconv.Itoa(m.Matched),
			fmt.Sprintf("%.3f", m.MeanAbsPct), fmt.Sprintf("%.3f", m.StddevPct), fmt.Sprintf("%.3f", m.MedianPct),
			fmt.Sprintf("%.3f", m.P90Pct), fmt.Sprintf("%.3f", m.P99Pct), fmt.Sprintf("%.3f", m.MaxPct),
			fmt.Sprintf("%+.3f", m.MeanSignedPct), fmt.Sprintf("%.1f", m.SamplesPerS), FormatMs(m.MeanTrueMs)})
	}
}

// connectionCharts draws, for the topN TCP connections by data bytes and
// the topN QUIC flows by bytes, RTT over time per method, goodput over
// time (TCP) and the time-sequence graph (TCP).
func connectionCharts(p *analyzePage, r *model.Analysis, samples []model.PassiveRTT, topN int) {
	byFlow := map[string][]model.PassiveRTT{}
	for _, s := range samples {
		byFlow[s.Flow] = append(byFlow[s.Flow], s)
	}
	tcp := byBytes(r)
	for _, c := range tcp[:min(topN, len(tcp))] {
		name := c.A + " > " + c.B
		cc := connCharts{Title: "TCP " + name}
		if f, ok := rttFigure(name, byFlow[name]); ok {
			cc.Charts = append(cc.Charts, f)
		}
		cc.Charts = append(cc.Charts, goodputFigure(c))
		if c.TimeSeq != nil {
			cc.Charts = append(cc.Charts, tseqFigure(c))
		}
		p.Conns = append(p.Conns, cc)
	}
	quic := make([]*model.QUICConn, 0, len(r.QUIC))
	for i := range r.QUIC {
		quic = append(quic, &r.QUIC[i])
	}
	sort.SliceStable(quic, func(i, j int) bool {
		return quic[i].Bytes[0]+quic[i].Bytes[1] > quic[j].Bytes[0]+quic[j].Bytes[1]
	})
	for _, q := range quic[:min(topN, len(quic))] {
		name := q.Client + " > " + q.Server
		if f, ok := rttFigure(name, byFlow[name]); ok {
			p.Conns = append(p.Conns, connCharts{Title: "QUIC " + name, Charts: []figure{f}})
		}
	}
}

// methodOrder fixes each method's colour across charts.
var methodOrder = []string{"ts-full", "ts-side-a", "ts-side-b", "seqack-side-a", "seqack-side-b",
	"spin-full-up", "spin-full-down", "spin-side-server", "spin-side-client"}

func rttFigure(name string, ss []model.PassiveRTT) (figure, bool) {
	if len(ss) == 0 {
		return figure{}, false
	}
	est := map[string][]point{}
	truth := map[string][]point{}
	for _, s := range ss {
		if !s.Valid {
			continue
		}
		est[s.Method] = append(est[s.Method], point{s.TimeS, s.RTTMs})
		if s.TrueMs > 0 {
			truth[s.Method] = append(truth[s.Method], point{s.TimeS, s.TrueMs})
		}
	}
	ch := lineChart{Title: "RTT over time, " + name, XLabel: "time (s)", YLabel: "RTT (ms)", YZero: true}
	for i, m := range methodOrder {
		col := palette[i%len(palette)]
		if len(est[m]) > 0 {
			ch.Series = append(ch.Series, series{Name: m, Points: est[m], Color: col, Width: 1.2})
		}
		if len(truth[m]) > 0 {
			ch.Series = append(ch.Series, series{Name: m + " truth", Points: truth[m], Color: col, Width: 1, Dash: true})
		}
	}
	if len(ch.Series) == 0 {
		return figure{}, false
	}
	caption := "RTT over time per method (valid samples)"
	if len(truth) > 0 {
		caption += "; dashed: ground truth of the same samples"
	}
	return figure{Caption: caption, SVG: template.HTML(ch.svg())}, true
}

func goodputFigure(c *model.TCPConn) figure {
	ch := lineChart{Title: "Goodput over time, " + c.A + " > " + c.B, XLabel: "time (s)", YLabel: "goodput (Mbit/s)", YZero: true}
	for i, d := range []model.TCPDir{c.AB, c.BA} {
		var pts []point
		for k, v := range d.GoodputSeries {
			pts = append(pts, point{c.StartS + (float64(k)+0.5)*c.IntervalS, v / 1e6})
		}
		if len(pts) > 0 {
			ch.Series = append(ch.Series, series{Name: [2]string{"A→B", "B→A"}[i], Points: pts, Color: palette[i]})
		}
	}
	return figure{Caption: fmt.Sprintf("Goodput (new bytes) per %s interval", FormatDuration(c.IntervalS)), SVG: template.HTML(ch.svg())}
}

// tseqFigure draws a tcptrace-style time-sequence graph: each data segment
// a vertical bar from its first to its last byte, retransmissions in red,
// the cumulative ACK as a step line and the receive window's right edge
// above it.
func tseqFigure(c *model.TCPConn) figure {
	ts := c.TimeSeq
	unit, div := "KiB", 1024.0
	var ymax int64
	for _, s := range ts.Data {
		ymax = max(ymax, s.End)
	}
	if ymax > 8<<20 {
		unit, div = "MiB", 1<<20
	}
	stride := max(1, (len(ts.Data)+tseqMaxMarks-1)/tseqMaxMarks)
	var data, retrans []point // pairs: bottom, top
	for i, s := range ts.Data {
		if i%stride == 0 {
			data = append(data, point{s.T, float64(s.Seq) / div}, point{s.T, float64(s.End) / div})
		}
	}
	for _, s := range ts.Retrans[:min(len(ts.Retrans), tseqMaxMarks)] {
		retrans = append(retrans, point{s.T, float64(s.Seq) / div}, point{s.T, float64(s.End) / div})
	}
	var ack, win []point
	for _, a := range ts.Acks {
		if len(ack) > 0 { // steps: hold the previous value until this ACK
			ack = append(ack, point{a.T, ack[len(ack)-1].Y})
			win = append(win, point{a.T, win[len(win)-1].Y})
		}
		ack = append(ack, point{a.T, float64(a.Ack) / div})
		win = append(win, point{a.T, float64(a.Win) / div})
	}
	ch := lineChart{Title: "Time-sequence graph, " + c.A + " > " + c.B, XLabel: "time (s)",
		YLabel: "sequence (" + unit + ")", YZero: true,
		Series: []series{
			{Name: "data", Points: data, Color: "#1f3b99"},
			{Name: "retransmitted", Points: retrans, Color: "#d62728"},
			{Name: "ACK", Points: ack, Color: "#2ca02c"},
			{Name: "receive window", Points: win, Color: "#e0a800"},
		}}
	svg := ch.svgWith(func(b *strings.Builder, xs, ys scale) {
		bars := func(pts []point, color string, w, minH float64) {
			if len(pts) == 0 {
				return
			}
			b.WriteString(`<path fill="none" stroke="` + color + `" stroke-width="` + f1(w) + `" d="`)
			for i := 0; i+1 < len(pts); i += 2 {
				x := f1(xs.at(pts[i].X))
				y0, y1 := ys.at(pts[i].Y), ys.at(pts[i+1].Y)
				if d := minH - (y0 - y1); d > 0 { // tall enough to see
					y0 += d / 2
					y1 -= d / 2
				}
				b.WriteString("M" + x + " " + f1(y0) + "V" + f1(y1))
			}
			b.WriteString(`"/>`)
		}
		bars(data, "#1f3b99", 1.2, 1)
		bars(retrans, "#d62728", 2, 6)
		// tcptrace marks each retransmission with an R.
		b.WriteString(`<g fill="#d62728" font-size="9" font-weight="600">`)
		for i := 0; i+1 < len(retrans) && i < 400; i += 2 {
			b.WriteString(`<text x="` + f1(xs.at(retrans[i].X)+2) + `" y="` + f1(ys.at(retrans[i+1].Y)-2) + `">R</text>`)
		}
		b.WriteString(`</g>`)
	}, map[string]bool{"data": true, "retransmitted": true})
	dir := "A→B"
	if ts.Dir == "B>A" {
		dir = "B→A"
	}
	caption := fmt.Sprintf("Time-sequence graph of the %s data (%d segments, %d retransmitted)", dir, len(ts.Data)*ts.Stride, len(ts.Retrans))
	if ts.Stride > 1 || stride > 1 {
		caption += fmt.Sprintf("; 1 of %d segments drawn", ts.Stride*stride)
	}
	return figure{Caption: caption, SVG: template.HTML(svg)}
}

func httpTables(p *analyzePage, r *model.Analysis, maxRows int) {
	p.PagesHead = []string{"client", "start", "completion", "connections", "new", "max parallel", "requests", "responses",
		"response bytes", "mean TTFB", "incomplete", "hosts"}
	for i, g := range r.HTTPPages {
		if i == maxRows {
			p.PagesNote = fmt.Sprintf("the first %d of %d page loads (all are in --json)", maxRows, len(r.HTTPPages))
			break
		}
		p.Pages = append(p.Pages, []string{g.Client, FormatDuration(g.StartS), FormatDuration(g.CompletionS),
			strconv.Itoa(g.Connections), strconv.Itoa(g.NewConns), strconv.Itoa(g.MaxParallel), strconv.Itoa(g.Requests),
			strconv.Itoa(g.Responses), units.FormatBytes(float64(g.RespBytes)), FormatMs(g.MeanTTFBMs), strconv.Itoa(g.Incomplete),
			strings.Join(g.Hosts, " ")})
	}
	p.HTTPHead = []string{"client > server", "version", "requests", "responses", "pipelined", "keep-alive", "closed by",
		"idle before close", "incomplete"}
	p.ReqHead = []string{"connection", "request at", "method", "host", "path", "version", "status", "request", "response",
		"TTFB", "complete", "keep-alive"}
	var conns []*model.TCPConn
	for i := range r.TCP {
		if r.TCP[i].HTTP != nil {
			conns = append(conns, &r.TCP[i])
		}
	}
	sort.SliceStable(conns, func(i, j int) bool { return conns[i].StartS < conns[j].StartS })
	total := 0
	for _, c := range conns {
		h := c.HTTP
		closeBy := h.CloseBy
		if closeBy != "" {
			closeBy += " (" + h.CloseHow + ")"
		}
		idle := ""
		if h.IdleBeforeCloseS > 0 {
			idle = FormatDuration(h.IdleBeforeCloseS)
		}
		switch {
		case len(p.HTTP) < maxRows:
			p.HTTP = append(p.HTTP, []string{c.A + " > " + c.B, h.Version, strconv.Itoa(h.Requests), strconv.Itoa(h.Responses),
				strconv.Itoa(h.Pipelined), yesNo(h.KeepAlive), closeBy, idle, h.Incomplete})
		case p.HTTPNote == "":
			p.HTTPNote = fmt.Sprintf("the first %d of %d connections (all are in --json)", maxRows, len(conns))
		}
		for _, x := range h.Exchanges {
			total++
			if len(p.Reqs) >= maxRows {
				continue
			}
			st := ""
			if x.Status > 0 {
				st = strconv.Itoa(x.Status)
			}
			p.Reqs = append(p.Reqs, []string{c.A, FormatDuration(x.RequestS), x.Method, x.Host, x.Path, x.Version, st,
				units.FormatBytes(float64(x.ReqBytes)), units.FormatBytes(float64(x.RespBytes)), msOrDash(x.TTFBMs), msOrDash(x.CompleteMs),
				yesNo(x.KeepAlive)})
		}
	}
	if total > len(p.Reqs) {
		p.ReqNote = fmt.Sprintf("first %d of %d requests (all are in --json)", len(p.Reqs), total)
	}
	for i, g := range r.HTTPPages {
		if i >= 5 {
			break
		}
		if f, ok := waterfall(g, conns); ok {
			p.Waterfall = append(p.Waterfall, f)
		}
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func msOrDash(v float64) string {
	if v <= 0 {
		return "–"
	}
	return FormatMs(v)
}

// waterfall draws a page load: one row per connection, each request as a
// bar from its first byte (light: waiting for the first response byte,
// dark: receiving the response), the connection's start as a tick.
func waterfall(g model.HTTPPage, conns []*model.TCPConn) (figure, bool) {
	type bar struct{ a, ttfb, z float64 }
	type lane struct {
		name  string
		start float64
		bars  []bar
	}
	end := g.StartS + g.CompletionS
	var lanes []lane
	for _, c := range conns {
		if ap, err := netip.ParseAddrPort(c.A); err != nil || ap.Addr().String() != g.Client {
			continue
		}
		l := lane{name: c.A, start: c.StartS}
		for _, x := range c.HTTP.Exchanges {
			z := x.RequestS + x.CompleteMs/1e3
			if x.CompleteMs == 0 {
				z = x.RequestS + x.TTFBMs/1e3
			}
			if x.RequestS < g.StartS-1e-9 || x.RequestS > end+1e-9 {
				continue
			}
			l.bars = append(l.bars, bar{x.RequestS, x.RequestS + x.TTFBMs/1e3, z})
		}
		if len(l.bars) > 0 {
			lanes = append(lanes, l)
		}
	}
	if len(lanes) == 0 || len(lanes) > 60 {
		return figure{}, false
	}
	const laneH, top, left = 16, 8, 58
	plotW := float64(chartW - left - marginR)
	h := top + len(lanes)*laneH + 44
	xs := scale{lo: g.StartS, hi: math.Max(end, g.StartS+1e-3), a: left, b: left + plotW}
	lo, hi := niceRange(0, xs.hi-xs.lo)
	xs.hi = xs.lo + hi
	var b strings.Builder
	b.WriteString(`<svg class="chart" viewBox="0 0 ` + itoa(chartW) + " " + itoa(h) + `" role="img" aria-label="page load waterfall" font-size="` + itoa(fontSize) + `">`)
	b.WriteString(`<title>page load waterfall</title>`)
	b.WriteString(`<g stroke="#e3e3e3">`)
	tk := ticks(lo, hi)
	for _, t := range tk {
		x := f1(xs.at(xs.lo + t.v))
		b.WriteString(`<line x1="` + x + `" x2="` + x + `" y1="` + itoa(top) + `" y2="` + itoa(top+len(lanes)*laneH) + `"/>`)
	}
	b.WriteString(`</g><g fill="#555">`)
	for _, t := range tk {
		b.WriteString(`<text x="` + f1(xs.at(xs.lo+t.v)) + `" y="` + itoa(top+len(lanes)*laneH+16) + `" text-anchor="middle">` + esc(t.label) + `</text>`)
	}
	b.WriteString(`<text x="` + f1(left+plotW/2) + `" y="` + itoa(top+len(lanes)*laneH+36) + `" text-anchor="middle">time since the page load started (s)</text></g>`)
	for i, l := range lanes {
		y := float64(top + i*laneH)
		b.WriteString(`<text x="` + itoa(left-4) + `" y="` + f1(y+12) + `" text-anchor="end" fill="#555" font-size="10">#` + itoa(i+1) + `</text>`)
		b.WriteString(`<line x1="` + f1(xs.at(math.Max(l.start, xs.lo))) + `" x2="` + f1(xs.at(math.Max(l.start, xs.lo))) + `" y1="` + f1(y+2) + `" y2="` + f1(y+laneH-2) + `" stroke="#333"><title>` + esc(l.name) + ` opened</title></line>`)
		for _, br := range l.bars {
			x0, x1, x2 := xs.at(br.a), xs.at(math.Max(br.ttfb, br.a)), xs.at(math.Max(br.z, br.ttfb))
			b.WriteString(`<rect x="` + f1(x0) + `" y="` + f1(y+3) + `" width="` + f1(math.Max(x1-x0, 0.5)) + `" height="` + itoa(laneH-6) + `" fill="#a6c8e8"/>`)
			b.WriteString(`<rect x="` + f1(x1) + `" y="` + f1(y+3) + `" width="` + f1(math.Max(x2-x1, 1)) + `" height="` + itoa(laneH-6) + `" fill="#1f5f99"/>`)
		}
	}
	b.WriteString(`</svg>`)
	return figure{Caption: fmt.Sprintf("Page load of %s at %s: one row per connection; light: request → first response byte, dark: response", g.Client, FormatDuration(g.StartS)),
		SVG: template.HTML(b.String())}, true
}

const analyzeHTML = `{{template "top" .}}{{if .Files}}<section id="files"><h2>Captures</h2><table class="kv"><tbody>{{range .Files}}<tr><th>{{.Label}}</th><td>{{.Value}}</td></tr>{{end}}</tbody></table></section>{{end}}
{{if .TCP}}<section id="tcp"><h2>TCP connections</h2>
<p class="sub">RTT in ms, min / median (samples). The side RTT of A→B is observer → B → observer, of B→A observer → A → observer.</p>
{{if .TCPNote}}<p class="sub">{{.TCPNote}}</p>{{end}}{{template "grid" (arr .TCPHead .TCP)}}</section>{{end}}
{{if .QUIC}}<section id="quic"><h2>QUIC flows (spin bit)</h2>{{if .QUICNote}}<p class="sub">{{.QUICNote}}</p>{{end}}{{template "grid" (arr .QUICHead .QUIC)}}</section>{{end}}
{{if .Truth}}<section id="truth"><h2>Error against ground truth</h2><p class="sub">{{.TruthNote}}</p>{{template "grid" (arr .TruthHead .Truth)}}</section>{{end}}
{{range .Conns}}<section class="conn"><h2>{{.Title}}</h2><div class="charts">{{range .Charts}}<figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure>{{end}}</div></section>
{{end}}
{{if .HTTP}}<section id="http"><h2>HTTP/1.x</h2>
{{if .Pages}}<h3>Page loads</h3>{{if .PagesNote}}<p class="sub">{{.PagesNote}}</p>{{end}}{{template "grid" (arr .PagesHead .Pages)}}{{end}}
{{if .Waterfall}}<div class="charts">{{range .Waterfall}}<figure><figcaption>{{.Caption}}</figcaption>{{.SVG}}</figure>{{end}}</div>{{end}}
<h3>Connections</h3>{{if .HTTPNote}}<p class="sub">{{.HTTPNote}}</p>{{end}}{{template "grid" (arr .HTTPHead .HTTP)}}
<h3>Requests</h3>{{if .ReqNote}}<p class="sub">{{.ReqNote}}</p>{{end}}{{template "grid" (arr .ReqHead .Reqs)}}
</section>{{end}}
{{if .Notes}}<section><h2>Notes</h2><ul class="list">{{range .Notes}}<li>{{.}}</li>{{end}}</ul></section>{{end}}
{{template "foot" .}}`
