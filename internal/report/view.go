package report

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// row is one labelled figure. Note carries context printed next to the
// value: sample counts, the idle reference, and ground truth from the lab.
type row struct {
	Label string
	Value string
	Note  string
	Level string // "", levelOK, levelWarn or levelBad
}

// flowRow is one load-carrying connection, formatted.
type flowRow struct {
	ID, DSCP, Goodput, Bytes, Warmup, WarmupHow string
	Efficiency, Retrans, Rwnd, Sndbuf, Verdict  string
	MaxAchievable, RxDSCP                       string
}

// classRow is one class of a QoS classes test, formatted.
type classRow struct {
	Name, Direction, DSCP, Goodput, RTTMedian, RTTP90, RxDSCP, Marks string
	Level                                                            string
}

// directionView is what both writers show for one load phase.
type directionView struct {
	Key          string // "download" or "upload"
	Title        string
	Summary      []row
	Verdict      string
	VerdictLevel string
	RFCTitle     string
	RFC          []row // nil without an RFC 6349 block
	Flows        []flowRow
	FlowDSCP     bool // some flow was marked or had its mark read
	d            *model.DirectionResult
}

// view is the formatted content of a report, shared by WriteText and
// WriteHTML so that both say the same thing.
type view struct {
	Header     []row
	Grades     []row // nil without grades
	Baseline   []row // nil without a baseline
	Directions []directionView
	ClassesDur string
	Classes    []classRow
	Notes      []string
	Errors     []string
}

func buildView(r *model.Result) view {
	v := view{
		Header:   headerRows(r),
		Grades:   gradeRows(resultGrades(r)),
		Baseline: baselineRows(r),
		Notes:    nonEmpty(r.Notes),
		Errors:   nonEmpty(r.Errors),
	}
	for _, d := range directions(r) {
		v.Directions = append(v.Directions, buildDirection(r, d))
	}
	v.Directions = append(v.Directions, bidirViews(r)...)
	if r.Classes != nil {
		if r.Classes.DurationS > 0 {
			v.ClassesDur = FormatDuration(r.Classes.DurationS)
		}
		for _, cf := range r.Classes.Flows {
			v.Classes = append(v.Classes, buildClassRow(cf))
		}
	}
	return v
}

// directions lists the phases that were measured, download first.
func directions(r *model.Result) []*model.DirectionResult {
	var ds []*model.DirectionResult
	if r.Download != nil {
		ds = append(ds, r.Download)
	}
	if r.Upload != nil {
		ds = append(ds, r.Upload)
	}
	return ds
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func headerRows(r *model.Result) []row {
	var rows []row
	server := r.Server.Address
	if server == "" {
		server = r.Config.Server
	}
	if server == "" {
		server = "unknown"
	}
	rows = append(rows, row{Label: "server", Value: server, Note: endpointDetails(r.Server)})
	if c := r.Client; c.Address != "" || c.Hostname != "" || c.Software != "" {
		addr := c.Address
		if addr == "" {
			addr = c.Hostname
		}
		det := endpointDetails(c)
		if c.Address == "" {
			det = endpointDetails(model.Endpoint{Software: c.Software, Kernel: c.Kernel})
		}
		rows = append(rows, row{Label: "client", Value: addr, Note: det})
	}
	if !r.Start.IsZero() {
		tr := row{Label: "started", Value: r.Start.UTC().Format(time.RFC3339)}
		if !r.End.IsZero() && r.End.After(r.Start) {
			tr.Note = "took " + FormatDuration(r.End.Sub(r.Start).Seconds())
		}
		rows = append(rows, tr)
	}
	if r.ID != "" {
		rows = append(rows, row{Label: "id", Value: r.ID})
	}
	if cfg := configSummary(r.Config); cfg != "" {
		rows = append(rows, row{Label: "config", Value: cfg})
	}
	if note := loopbackNote(r); note != "" {
		rows = append(rows, row{Label: "note", Value: note, Level: levelWarn})
	}
	if r.Truth != nil {
		rows = append(rows, row{Label: "lab path", Value: truthSummary(r.Truth)})
	}
	return rows
}

func endpointDetails(e model.Endpoint) string {
	var parts []string
	if e.Software != "" {
		parts = append(parts, e.Software)
	}
	if e.Hostname != "" && e.Hostname != e.Address {
		parts = append(parts, "host "+e.Hostname)
	}
	if e.Kernel != "" {
		parts = append(parts, e.Kernel)
	}
	return strings.Join(parts, ", ")
}

func configSummary(c model.TestConfig) string {
	var parts []string
	if c.Streams != "" {
		parts = append(parts, "streams "+c.Streams)
	}
	if c.DurationS > 0 {
		parts = append(parts, FormatDuration(c.DurationS)+" per direction")
	}
	if c.ProbeMs > 0 {
		parts = append(parts, "probe every "+FormatMs(c.ProbeMs))
	}
	if c.TLS {
		parts = append(parts, "TLS")
	}
	if c.DSCP != 0 {
		parts = append(parts, "DSCP "+strconv.Itoa(c.DSCP))
	}
	if c.LinkRateBps > 0 {
		parts = append(parts, "link rate "+units.FormatRate(c.LinkRateBps))
	}
	if len(c.Classes) > 0 {
		var names []string
		for _, cl := range c.Classes {
			names = append(names, fmt.Sprintf("%s=%d", cl.Name, cl.DSCP))
		}
		parts = append(parts, "classes "+strings.Join(names, " "))
	}
	return strings.Join(parts, ", ")
}

// loopbackNote warns that an embedded or loopback run measures the host,
// not a network path.
func loopbackNote(r *model.Result) string {
	switch {
	case r.Config.Embedded:
		return "embedded server on this host: figures measure the local TCP stack, not a network path"
	case isLoopback(r.Server.Address) || isLoopback(r.Config.Server):
		return "server on loopback: figures measure the local TCP stack, not a network path"
	}
	return ""
}

func isLoopback(addr string) bool {
	if addr == "" {
		return false
	}
	// Accept URLs and host:port alike.
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = addr[i+3:]
	}
	if i := strings.IndexByte(addr, '/'); i >= 0 {
		addr = addr[:i]
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func truthSummary(t *model.GroundTruth) string {
	var parts []string
	if t.Profile != "" {
		parts = append(parts, "profile "+strconv.Quote(t.Profile))
	}
	if t.BaseRTTMs > 0 {
		parts = append(parts, "RTT "+FormatMs(t.BaseRTTMs))
	}
	if t.DownRateBps > 0 {
		parts = append(parts, "down "+units.FormatRate(t.DownRateBps))
	}
	if t.UpRateBps > 0 {
		parts = append(parts, "up "+units.FormatRate(t.UpRateBps))
	}
	if t.DownLoss > 0 || t.UpLoss > 0 {
		parts = append(parts, "loss "+lossPct(t.DownLoss)+" down, "+lossPct(t.UpLoss)+" up")
	}
	if t.DownQueueBytes > 0 || t.UpQueueBytes > 0 {
		parts = append(parts, "queue "+units.FormatBytes(float64(t.DownQueueBytes))+" down, "+
			units.FormatBytes(float64(t.UpQueueBytes))+" up")
	}
	if t.MTU > 0 {
		parts = append(parts, "MTU "+strconv.Itoa(t.MTU))
	}
	return strings.Join(parts, ", ")
}

// lossPct prints a configured loss probability (a fraction, 0.01 = 1 %).
func lossPct(p float64) string {
	return FormatPct(p*100, 2)
}

// statsMs summarises chosen percentiles of a millisecond sample with one
// unit at the end: "min 19.1, p10 19.2, median 19.3, p90 19.6 ms".
func statsMs(s model.Stats, which ...string) string {
	var parts []string
	for _, w := range which {
		var v float64
		switch w {
		case "min":
			v = s.Min
		case "p10":
			v = s.P10
		case "median":
			v = s.P50
		case "p90":
			v = s.P90
		case "p99":
			v = s.P99
		case "max":
			v = s.Max
		case "mean":
			v = s.Mean
		}
		num := na
		if finite(v) {
			num = msNumber(v)
		}
		parts = append(parts, w+" "+num)
	}
	return strings.Join(parts, ", ") + " ms"
}

func joinNotes(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// idleMedian is the idle reference for loaded RTT, if one was measured.
func idleMedian(r *model.Result) (float64, bool) {
	if r.Baseline == nil || r.Baseline.RTTMs.N == 0 || !finite(r.Baseline.RTTMs.P50) {
		return 0, false
	}
	return r.Baseline.RTTMs.P50, true
}

func baselineRows(r *model.Result) []row {
	b := r.Baseline
	if b == nil {
		return nil
	}
	var rows []row
	rtt := row{Label: "RTT"}
	if b.RTTMs.N > 0 {
		rtt.Value = statsMs(b.RTTMs, "min", "p10", "median", "p90")
		rtt.Note = "n=" + strconv.Itoa(b.RTTMs.N)
	} else {
		rtt.Value = "no samples"
	}
	if t := r.Truth; t != nil && t.BaseRTTMs > 0 && finite(t.BaseRTTMs) {
		tn := "configured " + FormatMs(t.BaseRTTMs)
		want := t.BaseRTTMs
		if t.ProbeRTTMs > t.BaseRTTMs && finite(t.ProbeRTTMs) {
			// The probe and its reply also take time to serialise on
			// slow links; that is part of the true RTT of a probe.
			want = t.ProbeRTTMs
			tn += " + " + FormatMs(t.ProbeRTTMs-t.BaseRTTMs) + " probe serialisation"
		}
		if b.RTTMs.N > 0 {
			tn += ", min off by " + FormatDeltaMs(b.RTTMs.Min-want)
		}
		rtt.Note = joinNotes(rtt.Note, tn)
	}
	rows = append(rows, rtt)
	if b.Lost > 0 {
		rows = append(rows, row{Label: "lost", Value: fmt.Sprintf("%d of %d probes", b.Lost, b.Lost+b.RTTMs.N), Level: levelWarn})
	}
	if b.ClientMinRTTMs > 0 || b.ServerMinRTTMs > 0 {
		rows = append(rows, row{
			Label: "TCP_INFO",
			Value: "min_rtt client " + FormatMs(b.ClientMinRTTMs) + ", server " + FormatMs(b.ServerMinRTTMs),
			Note:  "srtt client " + FormatMs(b.ClientRTTMs) + ", server " + FormatMs(b.ServerRTTMs),
		})
	}
	return rows
}

func directionTitle(d *model.DirectionResult) (key, title string) {
	key = strings.ToLower(strings.TrimSpace(d.Direction))
	if key == "" {
		key = "direction"
	}
	return key, strings.ToUpper(key[:1]) + key[1:]
}

// owdRows shows the one-way delays of the UDP probes under load next to
// idle, so the added delay is attributed to a direction.
func owdRows(idle, loaded *model.UDPFlow) []row {
	if loaded == nil || loaded.Replies == 0 {
		return nil
	}
	var rows []row
	for _, d := range []struct {
		label      string
		load, base *model.UDPDirectionStats
	}{{"one-way up", &loaded.Forward, nil}, {"one-way down", &loaded.Backward, nil}} {
		if idle != nil && idle.Replies > 0 {
			if d.label == "one-way up" {
				d.base = &idle.Forward
			} else {
				d.base = &idle.Backward
			}
		}
		if d.load.OWDMs.N == 0 || !finite(d.load.OWDMs.P50) {
			continue
		}
		rw := row{Label: d.label, Value: "median " + FormatMs(d.load.OWDMs.P50) + ", p99 " + FormatMs(d.load.OWDMs.P99)}
		if d.base != nil && d.base.OWDMs.N > 0 && finite(d.base.OWDMs.P50) {
			rw.Value += " (" + FormatDeltaMs(d.load.OWDMs.P50-d.base.OWDMs.P50) + " vs idle)"
		}
		var notes []string
		if d.load.OWDEstimated {
			notes = append(notes, "estimate (clock offset)")
		}
		if d.load.Lost > 0 {
			notes = append(notes, fmt.Sprintf("%.1f %% lost", d.load.LossPct))
		}
		notes = append(notes, "UDP, n="+strconv.Itoa(d.load.OWDMs.N))
		rw.Note = strings.Join(notes, ", ")
		rows = append(rows, rw)
	}
	return rows
}

// truthRate is the configured bottleneck rate of a direction in the lab,
// or 0 when there is none to compare with.
func truthRate(t *model.GroundTruth, key string) float64 {
	if t == nil {
		return 0
	}
	var v float64
	switch key {
	case "download":
		v = t.DownRateBps
	case "upload":
		v = t.UpRateBps
	}
	if !finite(v) || v < 0 {
		return 0
	}
	return v
}

func truthQueue(t *model.GroundTruth, key string) int {
	if t == nil {
		return 0
	}
	switch key {
	case "download":
		return t.DownQueueBytes
	case "upload":
		return t.UpQueueBytes
	}
	return 0
}

func truthLoss(t *model.GroundTruth, key string) (float64, bool) {
	if t == nil {
		return 0, false
	}
	switch key {
	case "download":
		return t.DownLoss, true
	case "upload":
		return t.UpLoss, true
	}
	return 0, false
}

func buildDirection(r *model.Result, d *model.DirectionResult) directionView {
	key, title := directionTitle(d)
	dv := directionView{Key: key, Title: title, d: d}
	tr := truthRate(r.Truth, key)

	gp := row{Label: "goodput", Value: units.FormatRate(d.GoodputBps)}
	if d.DurationS > 0 {
		gp.Value += " over " + FormatDuration(d.DurationS)
	}
	if d.Bytes > 0 {
		gp.Value += " (" + units.FormatBytes(float64(d.Bytes)) + ")"
	}
	if tr > 0 {
		gp.Note = "configured " + units.FormatRate(tr) + ", " + FormatPct(100*d.GoodputBps/tr, 1) + " of it"
	}
	dv.Summary = append(dv.Summary, gp)
	if f := d.RFC6349; f != nil && f.DurationS > 0 {
		ss := row{Label: "steady state",
			Value: units.FormatRate(f.GoodputBps) + " over " + timeRange(f.WindowStartS, f.WindowEndS)}
		if tr > 0 {
			ss.Note = FormatPct(100*f.GoodputBps/tr, 1) + " of configured"
		}
		dv.Summary = append(dv.Summary, ss)
	}
	streams := strconv.Itoa(d.Streams)
	if d.StreamsMode != "" {
		streams += " (" + d.StreamsMode + ")"
	}
	dv.Summary = append(dv.Summary, row{Label: "streams", Value: streams})

	idle, haveIdle := idleMedian(r)
	if l := d.Latency; l != nil {
		lr := row{Label: "RTT loaded"}
		if l.RTTMs.N > 0 {
			lr.Value = statsMs(l.RTTMs, "median", "p90", "p99")
			lr.Note = "n=" + strconv.Itoa(l.RTTMs.N)
			if l.Lost > 0 {
				lr.Note += fmt.Sprintf(", %d lost", l.Lost)
			}
			if haveIdle {
				lr.Note += ", idle median " + FormatMs(idle)
			}
		} else {
			lr.Value = "no samples"
		}
		dv.Summary = append(dv.Summary, lr)
		if l.RTTMs.N > 0 && haveIdle && finite(l.RTTMs.P50) {
			added := l.RTTMs.P50 - idle
			ar := row{Label: "under load", Value: FormatDeltaMs(added) + " median RTT"}
			if q := truthQueue(r.Truth, key); q > 0 && tr > 0 {
				ar.Note = "lab queue " + units.FormatBytes(float64(q)) + " drains in " +
					FormatMs(float64(q)*8/tr*1000)
			}
			dv.Verdict, dv.VerdictLevel = queueingVerdict(key, added)
			ar.Level = dv.VerdictLevel
			dv.Summary = append(dv.Summary, ar)
		}
	}
	dv.Summary = append(dv.Summary, owdRows(r.BaselineUDP, d.UDPLatency)...)
	if p := d.RPM; p != nil {
		rr := row{Label: "RPM", Value: formatRPM(p.RPM)}
		if p.IdleRPM > 0 {
			rr.Value += " (idle " + formatRPM(p.IdleRPM) + ")"
		}
		dv.Summary = append(dv.Summary, rr)
		if probes, counts := rpmProbes(p); probes != "" {
			dv.Summary = append(dv.Summary, row{Label: "RPM probes", Value: probes, Note: counts})
		}
	}
	if f := d.RFC6349; f != nil {
		dv.RFCTitle = "RFC 6349, steady state " + timeRange(f.WindowStartS, f.WindowEndS)
		dv.RFC = rfcRows(r, key, d, f)
	}
	for i := range d.Flows {
		dv.Flows = append(dv.Flows, buildFlowRow(&d.Flows[i]))
		dv.FlowDSCP = dv.FlowDSCP || d.Flows[i].DSCP != 0 || d.Flows[i].ReceivedDSCP != nil
	}
	return dv
}

// rpmProbes lists the medians of the probe kinds behind RPM (metrics.md §5)
// and their sample counts.
func rpmProbes(p *model.RPM) (medians, counts string) {
	var parts, ns []string
	add := func(name string, s *model.Stats) {
		if s != nil && s.N > 0 && finite(s.P50) {
			parts = append(parts, name+" "+msNumber(s.P50))
			ns = append(ns, strconv.Itoa(s.N))
		}
	}
	add("TCP", &p.TCPMs)
	add("TLS", p.TLSMs)
	add("HTTP", &p.HTTPMs)
	add("self", &p.SelfMs)
	if len(parts) == 0 {
		return "", ""
	}
	return strings.Join(parts, ", ") + " ms", "medians, n=" + strings.Join(ns, "/")
}

func timeRange(a, b float64) string {
	return strconv.FormatFloat(a, 'f', 1, 64) + "-" + strconv.FormatFloat(b, 'f', 1, 64) + " s"
}

func rfcRows(r *model.Result, key string, d *model.DirectionResult, f *model.RFC6349) []row {
	var rows []row
	win := timeRange(f.WindowStartS, f.WindowEndS) + " (" + FormatDuration(f.DurationS)
	if f.Bytes > 0 {
		win += ", " + units.FormatBytes(float64(f.Bytes))
	}
	rows = append(rows, row{Label: "window", Value: win + ")"})

	gp := row{Label: "goodput", Value: units.FormatRate(f.GoodputBps)}
	if f.MaxGoodputBps > 0 {
		gp.Note = "max TCP goodput " + units.FormatRate(f.MaxGoodputBps) + " at link " + units.FormatRate(f.LinkRateBps)
	}
	rows = append(rows, gp)

	mtu := row{Label: "MSS / MTU", Value: bytesOrNA(uint64(f.MSS)) + " / " + bytesOrNA(uint64(f.PathMTU))}
	if r.Truth != nil && r.Truth.MTU > 0 {
		mtu.Note = "configured MTU " + strconv.Itoa(r.Truth.MTU) + " B"
	}
	rows = append(rows, mtu)

	ttr := row{Label: "TTR"}
	switch {
	case f.LinkRateBps <= 0:
		ttr.Value = "needs --link-rate"
	case f.TTR > 0:
		ttr.Value = strconv.FormatFloat(f.TTR, 'f', 2, 64)
		ttr.Note = "ideal " + FormatDuration(f.IdealTransferS) + ", actual " + FormatDuration(f.DurationS)
	default:
		ttr.Value = na
	}
	rows = append(rows, ttr)

	eff := row{Label: "efficiency", Value: FormatPct(f.EfficiencyPct, 2)}
	if f.BytesSent > 0 {
		eff.Value += " (" + units.FormatBytes(float64(f.BytesRetrans)) + " resent of " + units.FormatBytes(float64(f.BytesSent)) + ")"
	}
	if loss, ok := truthLoss(r.Truth, key); ok {
		eff.Note = "configured loss " + lossPct(loss)
	}
	rows = append(rows, eff)

	bd := row{Label: "buffer delay", Value: FormatPct(f.BufferDelayPct, 1)}
	if f.BaselineRTTMs > 0 || f.LoadedRTTMeanMs > 0 {
		bd.Note = "mean RTT " + FormatMs(f.LoadedRTTMeanMs) + " vs baseline " + FormatMs(f.BaselineRTTMs)
	}
	rows = append(rows, bd)

	bdp := row{Label: "BDP"}
	if f.BDPBits > 0 {
		bdp.Value = units.FormatBytes(f.BDPBits/8) + " (" + FormatBits(f.BDPBits) + ")"
	} else {
		bdp.Value = "needs --link-rate"
	}
	rows = append(rows, bdp)

	wins := []string{}
	if f.MaxCwndBytes > 0 {
		wins = append(wins, "cwnd "+units.FormatBytes(float64(f.MaxCwndBytes)))
	}
	if f.MaxSndWndBytes > 0 {
		wins = append(wins, "snd_wnd "+units.FormatBytes(float64(f.MaxSndWndBytes)))
	}
	if f.MaxRcvSpaceBytes > 0 {
		wins = append(wins, "rcv_space "+units.FormatBytes(float64(f.MaxRcvSpaceBytes)))
	}
	if len(wins) > 0 {
		rows = append(rows, row{Label: "max windows", Value: strings.Join(wins, ", ")})
	}
	var bufs []string
	if f.SndBufBytes > 0 {
		bufs = append(bufs, "sndbuf "+units.FormatBytes(float64(f.SndBufBytes)))
	}
	if f.RcvBufBytes > 0 {
		bufs = append(bufs, "rcvbuf "+units.FormatBytes(float64(f.RcvBufBytes)))
	}
	if len(bufs) > 0 {
		rows = append(rows, row{Label: "buffers", Value: strings.Join(bufs, ", ")})
	}
	if f.MaxAchievableBps > 0 {
		rows = append(rows, row{Label: "window limit", Value: units.FormatRate(f.MaxAchievableBps),
			Note: "max achievable with the observed window and RTT"})
	}
	bn := row{Label: "bottleneck", Value: f.Bottleneck, Note: flowVerdicts(d.Flows)}
	if bn.Value == "" {
		bn.Value = "unknown"
	}
	rows = append(rows, bn)
	for _, n := range nonEmpty(f.Notes) {
		rows = append(rows, row{Label: "note", Value: n})
	}
	return rows
}

func bytesOrNA(b uint64) string {
	if b == 0 {
		return na
	}
	return strconv.FormatUint(b, 10) + " B"
}

// flowVerdicts summarises per-flow bottlenecks: "flows: network 3,
// receiver window 1".
func flowVerdicts(flows []model.Flow) string {
	if len(flows) == 0 {
		return ""
	}
	counts := map[string]int{}
	for _, f := range flows {
		v := f.Bottleneck.Verdict
		if v == "" {
			v = "unknown"
		}
		counts[v]++
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	// Most common first; ties by name so the output is stable.
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + " " + strconv.Itoa(counts[n])
	}
	return "flows: " + strings.Join(parts, ", ")
}

func buildFlowRow(f *model.Flow) flowRow {
	fr := flowRow{
		ID:         strconv.Itoa(f.ID),
		Goodput:    units.FormatRate(f.GoodputBps),
		Bytes:      units.FormatBytes(float64(f.Bytes)),
		Efficiency: FormatPct(f.EfficiencyPct, 2),
		Retrans:    units.FormatBytes(float64(f.BytesRetrans)),
		Rwnd:       FormatPct(f.Bottleneck.RwndLimitedPct, 1),
		Sndbuf:     FormatPct(f.Bottleneck.SndbufLimitedPct, 1),
		Verdict:    f.Bottleneck.Verdict,
		WarmupHow:  f.WarmupHow,
		DSCP:       strconv.Itoa(f.DSCP),
		RxDSCP:     "-",
	}
	if fr.Verdict == "" {
		fr.Verdict = "unknown"
	}
	if f.WarmupS >= 0 && finite(f.WarmupS) {
		fr.Warmup = strconv.FormatFloat(f.WarmupS, 'f', 2, 64) + " s"
	} else {
		fr.Warmup = "none"
	}
	if f.MaxAchievableBps > 0 {
		fr.MaxAchievable = units.FormatRate(f.MaxAchievableBps)
	} else {
		fr.MaxAchievable = na
	}
	if f.ReceivedDSCP != nil {
		fr.RxDSCP = strconv.Itoa(*f.ReceivedDSCP)
	}
	return fr
}

func buildClassRow(cf model.ClassFlow) classRow {
	cr := classRow{
		Name:      cf.Class.Name,
		Direction: cf.Direction,
		DSCP:      strconv.Itoa(cf.Class.DSCP),
		Goodput:   units.FormatRate(cf.GoodputBps),
		RTTMedian: "-",
		RTTP90:    "-",
		RxDSCP:    "-",
		Marks:     "unknown",
	}
	if cr.Name == "" {
		cr.Name = "?"
	}
	if cf.RTTMs != nil && cf.RTTMs.N > 0 {
		cr.RTTMedian = FormatMs(cf.RTTMs.P50)
		cr.RTTP90 = FormatMs(cf.RTTMs.P90)
	}
	if cf.ReceivedDSCP != nil {
		cr.RxDSCP = strconv.Itoa(*cf.ReceivedDSCP)
	}
	if cf.MarksOK != nil {
		if *cf.MarksOK {
			cr.Marks, cr.Level = "ok", levelOK
		} else {
			cr.Marks, cr.Level = "changed", levelBad
		}
	}
	return cr
}
