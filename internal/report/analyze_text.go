package report

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// WriteSamplesCSV writes RTT samples as CSV, one line per sample
// (`sonde analyze --csv`).
func WriteSamplesCSV(w io.Writer, ss []model.PassiveRTT) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"t_s", "flow", "method", "rtt_ms", "valid", "flag", "true_ms"})
	for _, s := range ss {
		tm := ""
		if s.TrueMs > 0 {
			tm = strconv.FormatFloat(s.TrueMs, 'f', 6, 64)
		}
		_ = cw.Write([]string{strconv.FormatFloat(s.TimeS, 'f', 6, 64), s.Flow, s.Method,
			strconv.FormatFloat(s.RTTMs, 'f', 6, 64), strconv.FormatBool(s.Valid), s.Flag, tm})
	}
	cw.Flush()
	return cw.Error()
}

// appendRTT appends an RTT summary's cell to b: min/median/max (samples),
// or - without samples.
func appendRTT(b []byte, r model.RTTSummary) []byte {
	if r.Samples == 0 {
		return append(b, '-')
	}
	b = appendFixed2(b, r.MinMs)
	b = append(b, '/')
	b = appendFixed2(b, r.MedianMs)
	b = append(b, '/')
	b = appendFixed2(b, r.MaxMs)
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(r.Samples), 10)
	return append(b, ')')
}

// WriteAnalyzeText writes the text summary of a capture analysis (`sonde
// analyze`): TCP connections, QUIC flows, HTTP/1.x, the error against
// ground truth and the analyser's speed. r.Errors and r.Notes are not
// written: the command reports them on stderr.
func WriteAnalyzeText(w io.Writer, r *model.Analysis) error {
	return WriteAnalyzeTextColumns(w, r, nil)
}

// WriteAnalyzeTextColumns is WriteAnalyzeText with the TCP table's
// columns sized by cols, which saw the records as they were kept: the
// records are then read once, not twice (cols nil, or not given every
// record: they are read to size the columns).
func WriteAnalyzeTextColumns(w io.Writer, r *model.Analysis, cols *TextColumns) error {
	ew := &errWriter{w: w}
	err := writeAnalyzeText(ew, r, cols)
	return cmp.Or(ew.err, err)
}

// TextColumns sizes the text output's TCP and QUIC tables from the
// records given to AddTCP and AddQUIC (passive.Config.OnSpill).
type TextColumns struct {
	tcp, quic   table
	nTCP, nQUIC int
}

// AddTCP widens the TCP table's columns to r's rows.
func (c *TextColumns) AddTCP(r *model.TCPConn) {
	c.tcp.measureTCP(r)
	c.nTCP++
}

// Records is the number of records each table was sized to.
func (c *TextColumns) Records() (tcp, quic int) { return c.nTCP, c.nQUIC }

// AddQUIC widens the QUIC table's columns to r's row.
func (c *TextColumns) AddQUIC(r *model.QUICConn) {
	c.quic.measureQUIC(r)
	c.nQUIC++
}

// sizeColumns sizes tb's columns to head and the records: those of kept
// (a TextColumns' table that saw every record), or, without it, those
// measure gives for each record of each (read back).
func sizeColumns[T any](tb *table, head []string, kept *table, each func(func(*T) error) error, measure func(*table, *T)) {
	tb.measure(head...)
	if kept != nil {
		for i, v := range kept.width {
			tb.width[i] = max(tb.width[i], v)
		}
		return
	}
	_ = each(func(r *T) error {
		measure(tb, r)
		return nil
	})
}

func writeAnalyzeText(w io.Writer, r *model.Analysis, cols *TextColumns) error {
	fmt.Fprintf(w, "%d packets, %d bytes, %.3f s (%d not analysed)\n", r.Packets, r.Bytes, r.DurationS, r.Skipped)
	if r.Filter != "" {
		fmt.Fprintf(w, "filter %q", r.Filter)
		if r.Live == nil {
			fmt.Fprintf(w, ": %d packets of the files left out", r.Filtered)
		}
		fmt.Fprintln(w)
	}
	for _, f := range r.Files {
		if f.DamageOffset >= 0 {
			fmt.Fprintf(w, "%s: %s, damaged at byte %d (%s): analysed up to there\n", f.Path, f.Format, f.DamageOffset, f.Damage)
		}
	}
	// The records are read twice, to size the columns and then to write
	// them (a long capture's are on disk: model.Analysis.Spill), unless
	// cols sized the columns as they were kept.
	var httpConns []*model.TCPConn
	if r.NumTCP() > 0 {
		fmt.Fprintln(w, "\nTCP connections (RTT min/median/max ms (samples))")
		var tb table
		head := []string{"A > B", "dir", "pkts", "data bytes", "goodput Mbit/s", "retrans", "ooo", "dupack", "zwnd", "TS side", "SEQ/ACK side", "TS full"}
		var kept *table
		if cols != nil && cols.nTCP == r.NumTCP() {
			kept = &cols.tcp
		}
		sizeColumns(&tb, head, kept, r.EachTCP, (*table).measureTCP)
		var rc rowCells
		line, err := tb.writeRow(w, nil, head)
		if err == nil {
			err = r.EachTCP(func(c *model.TCPConn) error {
				if c.HTTP != nil {
					k := *c // EachTCP reuses c; the strings and HTTP that writeHTTPText reads stay
					httpConns = append(httpConns, &k)
				}
				tcpTextRows(c, &rc, func(rc *rowCells) { line, err = tb.writeCells(w, line, rc) })
				return err
			})
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(w, "(TS/SEQ-ACK side of A>B: observer → B → observer; of B>A: observer → A → observer)")
	}
	if r.NumQUIC() > 0 {
		fmt.Fprintln(w, "\nQUIC flows (spin RTT min/median/max ms (valid samples))")
		var tb table
		head := []string{"client > server", "version", "pkts c>s/s>c", "spin", "edges", "glitches", "full (c>s edges)", "full (s>c edges)", "server side", "client side", "rejected"}
		var kept *table
		if cols != nil && cols.nQUIC == r.NumQUIC() {
			kept = &cols.quic
		}
		sizeColumns(&tb, head, kept, r.EachQUIC, (*table).measureQUIC)
		var rc rowCells
		line, err := tb.writeRow(w, nil, head)
		if err == nil {
			err = r.EachQUIC(func(q *model.QUICConn) error {
				quicTextRow(q, &rc)
				line, err = tb.writeCells(w, line, &rc)
				return err
			})
		}
		if err != nil {
			return err
		}
	}
	writeHTTPText(w, r, httpConns)
	if t := r.Truth; t != nil {
		fmt.Fprintf(w, "\nError against ground truth (%s, observer at %s), |e| in %%\n", t.File, t.Observer)
		tb := table{indent: "  ", right: []bool{true, true, true, true, true, true, true, true, true, true, true, true, true}}
		tb.row("method", "samples", "matched", "dropped", "mean", "stddev", "median", "p90", "p99", "max", "bias", "samples/s", "true ms")
		for _, m := range t.Methods {
			tb.row(m.Method, num(m.Samples), num(m.Matched), num(m.Dropped), fixed(m.MeanAbsPct, 3), fixed(m.StddevPct, 3), fixed(m.MedianPct, 3),
				fixed(m.P90Pct, 3), fixed(m.P99Pct, 3), fixed(m.MaxPct, 3), fmt.Sprintf("%+.3f", m.MeanSignedPct),
				fixed(m.SamplesPerS, 1), fixed(m.MeanTrueMs, 2))
		}
		_ = tb.write(w)
	}
	// r.Errors and r.Notes go to stderr (analyzeStatus).
	if r.Live != nil {
		// Live capture: packets are analysed as they arrive, so the
		// analyser's own speed is not measured; report the arrival rate.
		rate := 0.0
		if r.DurationS > 0 {
			rate = float64(r.Packets) / r.DurationS
		}
		fmt.Fprintf(w, "\ncaptured %d packets in %.3f s (%.0f packets/s), peak %d live flows, %d evicted\n",
			r.Packets, r.DurationS, rate, r.Stats.PeakLiveFlows, r.Stats.EvictedFlows)
		if l := r.Live; l != nil {
			// The drops are always printed, 0 included: a rate is
			// only as good as the count of what it missed.
			fmt.Fprintf(w, "kernel on %s: %d packets received, %d dropped (sonde fell behind", l.Interface, l.KernelReceived, l.KernelDropped)
			if l.KernelRingFull > 0 {
				fmt.Fprintf(w, "; the ring filled %d times", l.KernelRingFull)
			}
			fmt.Fprintf(w, "), %d unread at the stop\n", l.Unread)
			if l.Workers > 0 {
				fmt.Fprintf(w, "%d socket(s) with a %s TPACKET_V3 ring each", l.Workers, units.FormatBytes(float64(l.RingBytes)))
				if l.Workers > 1 {
					fmt.Fprint(w, ", one fanout group split by flow, one worker each")
				}
				fmt.Fprintln(w)
			}
		}
		return nil
	}
	fmt.Fprintf(w, "\nanalysed at %.2f Mpps (%.3f s), peak %d live flows, %d evicted\n",
		r.Stats.PacketsPerS/1e6, r.Stats.WallS, r.Stats.PeakLiveFlows, r.Stats.EvictedFlows)
	return nil
}

// tcpTextRows gives a connection's two rows (A>B, B>A) to row, built in
// rc (a connection's cells are formatted into one reused buffer: a
// string per cell was most of the text output's allocations).
func tcpTextRows(c *model.TCPConn, rc *rowCells, row func(*rowCells)) {
	for i := range 2 {
		d, dir, side, sa := &c.AB, "A>B", &c.TSSideB, &c.SeqAckSideB
		rc.reset()
		if i == 0 {
			rc.b = append(append(append(rc.b, c.A...), " > "...), c.B...)
		} else {
			d, dir, side, sa = &c.BA, "B>A", &c.TSSideA, &c.SeqAckSideA
		}
		rc.next()
		rc.b = append(rc.b, dir...)
		rc.next()
		for _, v := range [...]uint64{d.Packets, d.DataBytes} {
			rc.b = strconv.AppendInt(rc.b, int64(v), 10)
			rc.next()
		}
		rc.b = appendFixed2(rc.b, d.GoodputBps/1e6)
		rc.next()
		for _, v := range [...]uint64{d.Retransmissions, d.OutOfOrder, d.DupACKs, d.ZeroWindows} {
			rc.b = strconv.AppendInt(rc.b, int64(v), 10)
			rc.next()
		}
		rc.b = appendRTT(rc.b, *side)
		rc.next()
		rc.b = appendRTT(rc.b, *sa)
		rc.next()
		if i == 0 {
			rc.b = appendRTT(rc.b, c.TSFull)
		}
		rc.next()
		row(rc)
	}
}

// quicTextRow formats a QUIC flow's row in rc.
func quicTextRow(q *model.QUICConn, rc *rowCells) {
	rc.reset()
	rc.b = append(append(append(rc.b, q.Client...), " > "...), q.Server...)
	rc.next()
	rc.b = append(rc.b, q.Version...)
	rc.next()
	pair := func(a, b int64) {
		rc.b = strconv.AppendInt(rc.b, a, 10)
		rc.b = append(rc.b, '/')
		rc.b = strconv.AppendInt(rc.b, b, 10)
		rc.next()
	}
	pair(int64(q.Packets[0]), int64(q.Packets[1]))
	rc.b = append(rc.b, q.Spin...)
	rc.next()
	pair(int64(q.Edges[0]), int64(q.Edges[1]))
	pair(int64(q.Glitches[0]), int64(q.Glitches[1]))
	for _, s := range [...]*model.RTTSummary{&q.SpinRTT[0], &q.SpinRTT[1], &q.Component[0], &q.Component[1]} {
		rc.b = appendRTT(rc.b, *s)
		rc.next()
	}
	for i, c := range q.Rejected {
		if i > 0 {
			rc.b = append(rc.b, ", "...)
		}
		rc.b = append(append(rc.b, c.Name...), ' ')
		rc.b = strconv.AppendInt(rc.b, int64(c.Count), 10)
	}
	rc.next()
}

// maxHTTPTextRows bounds the request table of the text output (--json
// has them all).
const maxHTTPTextRows = 50

// writeHTTPText prints the HTTP/1.x page loads, connections and requests
// of conns (the connections with HTTP).
func writeHTTPText(w io.Writer, r *model.Analysis, conns []*model.TCPConn) {
	if len(conns) == 0 {
		return
	}
	sort.SliceStable(conns, func(i, j int) bool { return conns[i].StartS < conns[j].StartS })
	if len(r.HTTPPages) > 0 {
		fmt.Fprintln(w, "\nHTTP page loads (a client's exchanges less than 1 s apart)")
		var tb table
		tb.row("client", "start s", "completion s", "conns", "new", "max parallel", "requests", "responses", "response bytes", "mean TTFB ms", "incomplete")
		for _, p := range r.HTTPPages {
			tb.row(p.Client, fixed(p.StartS, 3), fixed(p.CompletionS, 3), fmt.Sprint(p.Connections), fmt.Sprint(p.NewConns),
				fmt.Sprint(p.MaxParallel), fmt.Sprint(p.Requests), fmt.Sprint(p.Responses), fmt.Sprint(p.RespBytes),
				fixed(p.MeanTTFBMs, 1), fmt.Sprint(p.Incomplete))
		}
		_ = tb.write(w)
	}
	fmt.Fprintln(w, "\nHTTP/1.x connections")
	var conTable table
	conTable.row("client > server", "version", "requests", "responses", "pipelined", "keep-alive", "closed by", "idle before close s", "incomplete")
	for _, c := range conns {
		h := c.HTTP
		by := "-"
		if h.CloseBy != "" {
			by = h.CloseBy + " (" + h.CloseHow + ")"
		}
		conTable.row(c.A+" > "+c.B, h.Version, fmt.Sprint(h.Requests), fmt.Sprint(h.Responses), fmt.Sprint(h.Pipelined),
			fmt.Sprint(h.KeepAlive), by, fixed(h.IdleBeforeCloseS, 3), httpDash(h.Incomplete))
	}
	_ = conTable.write(w)
	fmt.Fprintln(w, "\nHTTP requests (TTFB: request's first byte → response's first byte at the observer)")
	var reqTable table
	reqTable.row("client", "at s", "method", "host", "path", "status", "response bytes", "TTFB ms", "complete ms", "keep-alive")
	n, total := 0, 0
	for _, c := range conns {
		for _, x := range c.HTTP.Exchanges {
			total++
			if n >= maxHTTPTextRows {
				continue
			}
			n++
			path := x.Path
			if len(path) > 60 {
				path = path[:57] + "..."
			}
			reqTable.row(c.A, fixed(x.RequestS, 3), x.Method, httpDash(x.Host), strings.ReplaceAll(path, "\t", " "),
				fmt.Sprint(x.Status), fmt.Sprint(x.RespBytes), fixed(x.TTFBMs, 1), fixed(x.CompleteMs, 1), fmt.Sprint(x.KeepAlive))
		}
	}
	_ = reqTable.write(w)
	if total > n {
		fmt.Fprintf(w, "(first %d of %d requests; --json has them all)\n", n, total)
	}
}

func httpDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// errWriter keeps the first write error, so that a long run of Fprintf
// calls is checked once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
