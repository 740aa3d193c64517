package report

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
)

// The widths of the TCP table's cells, computed without formatting them:
// the text output reads every connection twice, once to size the columns
// and once to write them, and formatting the floats of the first pass was
// a quarter of the output's time. Each width is that of the cell
// tcpTextRows formats (TestTextWidths compares them).

// measureTCP widens t's columns to c's two rows (tcpTextRows's).
func (t *table) measureTCP(c *model.TCPConn) {
	for len(t.width) < tcpTextCols {
		t.width = append(t.width, 0)
	}
	w := t.width[:tcpTextCols]
	w[0] = max(w[0], utf8.RuneCountInString(c.A)+3+utf8.RuneCountInString(c.B))
	w[1] = max(w[1], 3)
	w[11] = max(w[11], rttWidth(&c.TSFull))
	for i := range 2 {
		d, side, sa := &c.AB, &c.TSSideB, &c.SeqAckSideB
		if i == 1 {
			d, side, sa = &c.BA, &c.TSSideA, &c.SeqAckSideA
		}
		w[2] = max(w[2], intWidth(int64(d.Packets)))
		w[3] = max(w[3], intWidth(int64(d.DataBytes)))
		w[4] = max(w[4], fixed2Width(d.GoodputBps/1e6))
		w[5] = max(w[5], intWidth(int64(d.Retransmissions)))
		w[6] = max(w[6], intWidth(int64(d.OutOfOrder)))
		w[7] = max(w[7], intWidth(int64(d.DupACKs)))
		w[8] = max(w[8], intWidth(int64(d.ZeroWindows)))
		w[9] = max(w[9], rttWidth(side))
		w[10] = max(w[10], rttWidth(sa))
	}
}

// measureQUIC widens t's columns to q's row (quicTextRow's).
func (t *table) measureQUIC(q *model.QUICConn) {
	for len(t.width) < quicTextCols {
		t.width = append(t.width, 0)
	}
	w := t.width[:quicTextCols]
	w[0] = max(w[0], utf8.RuneCountInString(q.Client)+3+utf8.RuneCountInString(q.Server))
	w[1] = max(w[1], utf8.RuneCountInString(q.Version))
	w[2] = max(w[2], intWidth(int64(q.Packets[0]))+1+intWidth(int64(q.Packets[1])))
	w[3] = max(w[3], utf8.RuneCountInString(q.Spin))
	w[4] = max(w[4], intWidth(int64(q.Edges[0]))+1+intWidth(int64(q.Edges[1])))
	w[5] = max(w[5], intWidth(int64(q.Glitches[0]))+1+intWidth(int64(q.Glitches[1])))
	for i, s := range [...]*model.RTTSummary{&q.SpinRTT[0], &q.SpinRTT[1], &q.Component[0], &q.Component[1]} {
		w[6+i] = max(w[6+i], rttWidth(s))
	}
	n := 0
	for i, c := range q.Rejected {
		if i > 0 {
			n += 2
		}
		n += utf8.RuneCountInString(c.Name) + 1 + intWidth(int64(c.Count))
	}
	w[10] = max(w[10], n)
}

// quicTextCols is the number of cells of quicTextRow's rows.
const quicTextCols = 11

// tcpTextCols is the number of cells of tcpTextRows's rows.
const tcpTextCols = 12

// rttWidth is the width of appendRTT's text.
func rttWidth(r *model.RTTSummary) int {
	if r.Samples == 0 {
		return 1
	}
	return fixed2Width(r.MinMs) + 1 + fixed2Width(r.MedianMs) + 1 + fixed2Width(r.MaxMs) + 2 + intWidth(int64(r.Samples)) + 1
}

// intWidth is the width of strconv.AppendInt(v, 10).
func intWidth(v int64) int {
	n := 1
	u := uint64(v)
	if v < 0 {
		n, u = 2, -u
	}
	for ; u >= 10; u /= 10 {
		n++
	}
	return n
}

// fixed2Width is the width of strconv.AppendFloat(v, 'f', 2, 64). The
// integer part gains a digit where v rounds up to a power of ten (9.995,
// 99.995, …): a value too close to such an edge to tell which way it
// rounds, and one that is not finite or not small, is formatted.
func fixed2Width(v float64) int {
	a := math.Abs(v)
	if !(a < 1e12) {
		return formattedWidth(v)
	}
	n := 4 // d.dd
	if math.Signbit(v) {
		n++ // -0.00 too
	}
	for p := 10.0; p <= 1e12; p *= 10 {
		edge := p - 0.005
		if math.Abs(a-edge) < 1e-6 {
			return formattedWidth(v)
		}
		if a < edge {
			break
		}
		n++
	}
	return n
}

func formattedWidth(v float64) int {
	var b [32]byte
	return len(strconv.AppendFloat(b[:0], v, 'f', 2, 64))
}

// appendFixed2 appends strconv.AppendFloat(v, 'f', 2, 64)'s text. The
// cents are v × 100 rounded, exact but where the product is within 1e-3
// of a half (its error is below 1e-4 for |v| < 1e9), where strconv, which
// rounds the exact binary value, decides; so do large and non-finite
// values. The floats of the text's TCP rows were a third of its time
// through strconv's general path.
func appendFixed2(b []byte, v float64) []byte {
	a := math.Abs(v)
	if !(a < 1e9) {
		return strconv.AppendFloat(b, v, 'f', 2, 64)
	}
	x := a * 100
	r := math.Floor(x)
	f := x - r
	if math.Abs(f-0.5) < 1e-3 {
		return strconv.AppendFloat(b, v, 'f', 2, 64)
	}
	n := uint64(r)
	if f > 0.5 {
		n++
	}
	if math.Signbit(v) {
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, n/100, 10)
	c := n % 100
	return append(b, '.', byte('0'+c/10), byte('0'+c%10))
}
