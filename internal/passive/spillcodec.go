package passive

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// The spill's record encoding (spill.go): each record is a uvarint length
// and then its fields in declaration order, integers as (zigzag) varints,
// floats as their 8 bytes, strings and slices with a length first. gob,
// which this replaced, sent its type descriptions again in every run,
// allocated a message buffer per record and went through reflection per
// field: encoding and reading back the 10 M bench capture's records took
// 6 % of the run. A TCP record's HTTP exchanges and time-sequence record
// are not encoded: the spill keeps their pointers in memory (the HTTP
// records are kept in memory for the page loads anyway) and the record
// holds an index to them. TestSpillCodecEveryField fails when a field is
// added to a record and not here.

// maxSpillRecord bounds a record's length when it is read back (a
// connection's goodput series hold at most 2 × 2^20 bins).
const maxSpillRecord = 64 << 20

// errSpillRecord is a record that does not decode: the file was changed
// under the analysis.
var errSpillRecord = errors.New("a spilled record does not decode")

// spillEnc appends fields to b.
type spillEnc struct{ b []byte }

func (e *spillEnc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *spillEnc) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *spillEnc) f64(v float64) { e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v)) }
func (e *spillEnc) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *spillEnc) bool(v bool) {
	var b byte
	if v {
		b = 1
	}
	e.b = append(e.b, b)
}
func (e *spillEnc) len(n int)        { e.uint(uint64(n)) }
func (e *spillEnc) ints(v [2]int)    { e.int(int64(v[0])); e.int(int64(v[1])) }
func (e *spillEnc) u64s(v [2]uint64) { e.uint(v[0]); e.uint(v[1]) }

// spillDec reads fields from b; a field past the end or too long leaves
// bad set and zeros.
type spillDec struct {
	b   []byte
	bad bool
}

func (d *spillDec) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int reads a zigzag varint (binary.AppendVarint's).
func (d *spillDec) int() int64 {
	u := d.uint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (d *spillDec) f64() float64 {
	if len(d.b) < 8 {
		d.bad, d.b = true, nil
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// len reads a count of items of at least min bytes each.
func (d *spillDec) len(min int) int {
	n := d.uint()
	if n > uint64(len(d.b)/min) {
		d.bad, d.b = true, nil
		return 0
	}
	return int(n)
}

func (d *spillDec) str() string {
	n := d.len(1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *spillDec) bool() bool {
	if len(d.b) < 1 {
		d.bad = true
		return false
	}
	v := d.b[0] != 0
	d.b = d.b[1:]
	return v
}

func (d *spillDec) ints() [2]int     { return [2]int{int(d.int()), int(d.int())} }
func (d *spillDec) u64s() [2]uint64  { return [2]uint64{d.uint(), d.uint()} }
func (d *spillDec) strs() [2]string  { return [2]string{d.str(), d.str()} }
func (e *spillEnc) strs(v [2]string) { e.str(v[0]); e.str(v[1]) }
func (d *spillDec) err() error {
	if d.bad || len(d.b) != 0 {
		return errSpillRecord
	}
	return nil
}

func (e *spillEnc) rtt(s *model.RTTSummary) {
	e.int(int64(s.Samples))
	e.int(int64(s.Rejected))
	e.f64(s.MinMs)
	e.f64(s.MeanMs)
	e.f64(s.MedianMs)
	e.f64(s.P90Ms)
	e.f64(s.MaxMs)
}

func (d *spillDec) rtt(s *model.RTTSummary) {
	s.Samples = int(d.int())
	s.Rejected = int(d.int())
	s.MinMs = d.f64()
	s.MeanMs = d.f64()
	s.MedianMs = d.f64()
	s.P90Ms = d.f64()
	s.MaxMs = d.f64()
}

func (e *spillEnc) tcpDir(s *model.TCPDir) {
	for _, v := range [...]uint64{s.Packets, s.Bytes, s.DataPackets, s.DataBytes, s.UniqueBytes, s.Retransmissions,
		s.OutOfOrder, s.DupACKs, s.ZeroWindows, s.ZeroWindowProbes, s.SACKBlocks} {
		e.uint(v)
	}
	e.int(int64(s.MSS))
	e.int(int64(s.WindowScale))
	e.bool(s.SACKPermitted)
	e.bool(s.Timestamps)
	e.f64(s.GoodputBps)
	e.len(len(s.GoodputSeries))
	if s.GoodputSeries != nil {
		e.bool(true) // nil and empty stay apart
		for _, v := range s.GoodputSeries {
			e.f64(v)
		}
	} else {
		e.bool(false)
	}
}

func (d *spillDec) tcpDir(s *model.TCPDir) {
	for _, p := range [...]*uint64{&s.Packets, &s.Bytes, &s.DataPackets, &s.DataBytes, &s.UniqueBytes, &s.Retransmissions,
		&s.OutOfOrder, &s.DupACKs, &s.ZeroWindows, &s.ZeroWindowProbes, &s.SACKBlocks} {
		*p = d.uint()
	}
	s.MSS = int(d.int())
	s.WindowScale = int(d.int())
	s.SACKPermitted = d.bool()
	s.Timestamps = d.bool()
	s.GoodputBps = d.f64()
	n := d.len(8)
	spare := s.GoodputSeries // a record read back before: its series' array is reused
	s.GoodputSeries = nil
	if d.bool() {
		if spare != nil && cap(spare) >= n {
			s.GoodputSeries = spare[:n]
		} else {
			s.GoodputSeries = make([]float64, n)
		}
		for i := range s.GoodputSeries {
			s.GoodputSeries[i] = d.f64()
		}
	}
}

// tcpExtra is what a spilled TCP record keeps in memory (by index).
type tcpExtra struct {
	http    *model.HTTPConn
	timeSeq *model.TimeSequence
}

func encodeTCPRecord(s *recordSpill, e *spillEnc, r *model.TCPConn) {
	e.str(r.A)
	e.str(r.B)
	e.bool(r.SawSYN)
	e.str(r.Closed)
	e.f64(r.StartS)
	e.f64(r.DurationS)
	e.f64(r.IntervalS)
	e.tcpDir(&r.AB)
	e.tcpDir(&r.BA)
	for _, x := range [...]*model.RTTSummary{&r.TSFull, &r.TSSideA, &r.TSSideB, &r.SeqAckSideA, &r.SeqAckSideB} {
		e.rtt(x)
	}
	extra := 0
	if r.HTTP != nil || r.TimeSeq != nil {
		s.extra = append(s.extra, tcpExtra{r.HTTP, r.TimeSeq})
		extra = len(s.extra)
	}
	e.uint(uint64(extra))
}

// decodeTCPRecord decodes into r, which may hold a record decoded before
// (its goodput series' arrays are reused).
func decodeTCPRecord(s *recordSpill, d *spillDec, r *model.TCPConn) {
	ab, ba := r.AB.GoodputSeries, r.BA.GoodputSeries
	*r = model.TCPConn{}
	r.AB.GoodputSeries, r.BA.GoodputSeries = ab, ba
	r.A = d.str()
	r.B = d.str()
	r.SawSYN = d.bool()
	r.Closed = d.str()
	r.StartS = d.f64()
	r.DurationS = d.f64()
	r.IntervalS = d.f64()
	d.tcpDir(&r.AB)
	d.tcpDir(&r.BA)
	for _, x := range [...]*model.RTTSummary{&r.TSFull, &r.TSSideA, &r.TSSideB, &r.SeqAckSideA, &r.SeqAckSideB} {
		d.rtt(x)
	}
	if i := d.uint(); i > 0 {
		if i > uint64(len(s.extra)) {
			d.bad = true
			return
		}
		r.HTTP, r.TimeSeq = s.extra[i-1].http, s.extra[i-1].timeSeq
	}
}

func encodeQUICRecord(_ *recordSpill, e *spillEnc, r *model.QUICConn) {
	e.str(r.Client)
	e.str(r.Server)
	e.str(r.Version)
	e.ints(r.DCIDLen)
	e.f64(r.StartS)
	e.f64(r.DurationS)
	e.u64s(r.Packets)
	e.u64s(r.Bytes)
	e.u64s(r.Short)
	e.uint(r.Coalesced)
	e.uint(r.Greased)
	e.ints(r.CIDChange)
	e.str(r.Spin)
	e.strs(r.SpinDir)
	e.ints(r.Edges)
	e.ints(r.Glitches)
	e.bool(r.Rejected != nil)
	e.len(len(r.Rejected))
	for _, c := range r.Rejected {
		e.str(c.Name)
		e.int(int64(c.Count))
	}
	for i := range 2 {
		e.rtt(&r.SpinRTT[i])
		e.rtt(&r.Component[i])
	}
	e.bool(r.LossBits != nil)
	e.len(len(r.LossBits))
	for i := range r.LossBits {
		l := &r.LossBits[i]
		e.str(l.Direction)
		e.int(int64(l.Blocks))
		e.int(int64(l.Expected))
		e.int(int64(l.Seen))
		e.int(int64(l.UpstreamLost))
		e.f64(l.UpstreamLossPct)
		e.int(int64(l.EndToEndLost))
		e.f64(l.EndToEndLossPct)
	}
}

// decodeQUICRecord decodes into r (its slices are allocated afresh).
func decodeQUICRecord(_ *recordSpill, d *spillDec, r *model.QUICConn) {
	*r = model.QUICConn{}
	r.Client = d.str()
	r.Server = d.str()
	r.Version = d.str()
	r.DCIDLen = d.ints()
	r.StartS = d.f64()
	r.DurationS = d.f64()
	r.Packets = d.u64s()
	r.Bytes = d.u64s()
	r.Short = d.u64s()
	r.Coalesced = d.uint()
	r.Greased = d.uint()
	r.CIDChange = d.ints()
	r.Spin = d.str()
	r.SpinDir = d.strs()
	r.Edges = d.ints()
	r.Glitches = d.ints()
	if d.bool() {
		r.Rejected = make([]model.Count, d.len(2))
		for i := range r.Rejected {
			r.Rejected[i] = model.Count{Name: d.str(), Count: int(d.int())}
		}
	} else {
		d.len(1)
	}
	for i := range 2 {
		d.rtt(&r.SpinRTT[i])
		d.rtt(&r.Component[i])
	}
	if d.bool() {
		r.LossBits = make([]model.QUICLossBits, d.len(7))
		for i := range r.LossBits {
			l := &r.LossBits[i]
			l.Direction = d.str()
			l.Blocks = int(d.int())
			l.Expected = int(d.int())
			l.Seen = int(d.int())
			l.UpstreamLost = int(d.int())
			l.UpstreamLossPct = d.f64()
			l.EndToEndLost = int(d.int())
			l.EndToEndLossPct = d.f64()
		}
	} else {
		d.len(1)
	}
}
