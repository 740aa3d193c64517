package passive

import "github.com/sonde-project/sonde/internal/model"

// maxSeqPoints bounds each list of a connection's time-sequence record;
// past it, every other point is dropped and the sampling stride doubles,
// so memory stays bounded and the graph keeps its shape.
const maxSeqPoints = 4096

// timeSeq records the time-sequence graph of both directions of a TCP
// connection (Config.TimeSequence).
type timeSeq struct {
	dir [2]seqDir
}

type seqDir struct {
	base            uint32 // sequence number of the direction's first byte
	haveBase        bool
	data, retrans   []model.SeqSegment
	acks            []model.SeqAck // ACKs sent in this direction
	dataN, ackN     int
	dataStr, ackStr int
}

func (d *seqDir) rel(seq uint32) int64 { return int64(int32(seq - d.base)) }

// thin halves a full list and doubles its stride.
func thin[T any](s []T, stride *int) []T {
	if len(s) < maxSeqPoints {
		return s
	}
	k := 0
	for i := 0; i < len(s); i += 2 {
		s[k] = s[i]
		k++
	}
	*stride *= 2
	return s[:k]
}

// segment records one segment of direction dir.
func (ts *timeSeq) segment(a *Analyzer, c *tcpConn, dir uint8, t int64, s *tcpSegment, retrans bool) {
	d, o := &ts.dir[dir], &ts.dir[dir^1]
	tt := float64(t-a.first) / 1e9
	if !d.haveBase && (s.flags&flagSYN != 0 || s.payloadLen > 0) {
		d.base, d.haveBase = s.seq, true
		if s.flags&flagSYN != 0 {
			d.base++
		}
	}
	if d.dataStr == 0 {
		d.dataStr, d.ackStr = 1, 1
	}
	if s.payloadLen > 0 && d.haveBase {
		seg := model.SeqSegment{T: tt, Seq: d.rel(s.seq), End: d.rel(s.seq) + int64(s.payloadLen)}
		if retrans {
			if len(d.retrans) < maxSeqPoints {
				d.retrans = append(d.retrans, seg)
			}
		} else {
			if d.dataN%d.dataStr == 0 {
				d.data = thin(append(d.data, seg), &d.dataStr)
			}
			d.dataN++
		}
	}
	if s.flags&flagACK != 0 && o.haveBase {
		win := int64(s.window)
		if ws := c.dir[dir].st.WindowScale; ws > 0 && c.dir[dir^1].st.WindowScale >= 0 && s.flags&flagSYN == 0 {
			win <<= ws
		}
		ack := o.rel(s.ack)
		if d.ackN%d.ackStr == 0 {
			d.acks = thin(append(d.acks, model.SeqAck{T: tt, Ack: ack, Win: ack + win}), &d.ackStr)
		}
		d.ackN++
	}
}

// result picks the direction that carried more unique data.
func (ts *timeSeq) result(c *tcpConn) *model.TimeSequence {
	i, name := 0, "A>B"
	if c.dir[1].st.UniqueBytes > c.dir[0].st.UniqueBytes {
		i, name = 1, "B>A"
	}
	d := &ts.dir[i]
	if len(d.data) == 0 {
		return nil
	}
	return &model.TimeSequence{Dir: name, Stride: d.dataStr, Data: d.data, Retrans: d.retrans, Acks: ts.dir[i^1].acks}
}
