package store

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// The journal's records (docs/store.md, "The journal"). A segment file is
// segMagic then records, each framed as
//
//	length uint32 LE (of the payload) | CRC-32C uint32 LE (of type and payload) | type byte | payload
//
// and a payload is the monitor's ID, a row count and the rows, every
// integer a varint. One Write makes one record per table it has rows of
// (split past maxRecordRows rows), each appended whole by one write(2).
const (
	segMagic        = "SONDEJ1\n"
	frameHeader     = 9
	maxRecord       = 1 << 20 // a payload's bound, checked before it is read
	maxRecordRows   = 1024    // rows per record; a batch of more is split
	maxRecordTarget = 256 << 10
)

// Record types: one per table.
const (
	recProbes byte = 1 + iota
	recCounters
	recRollups
	recEvents
	recRestarts
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errDamaged is a record whose frame or payload does not check out: a
// torn write at a crash, or a damaged file.
var errDamaged = errors.New("damaged record")

// sealFrame fills the header of the record of typ at buf[start:], whose
// payload runs from buf[start+frameHeader:] to the end of buf.
func sealFrame(buf []byte, start int, typ byte) {
	payload := buf[start+frameHeader:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	buf[start+8] = typ
	crc := crc32.Update(crc32.Checksum(buf[start+8:start+9], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(buf[start+4:], crc)
}

// frameReader reads a segment's records, checking each length against
// maxRecord before it reads the payload, and each CRC.
type frameReader struct {
	r   *bufio.Reader
	off int64 // the end of the last good record
	buf []byte
}

// next returns the next record; io.EOF at a clean end, errDamaged at a
// torn or damaged one (off is where the good records end).
func (f *frameReader) next() (typ byte, payload []byte, err error) {
	var h [frameHeader]byte
	n, err := io.ReadFull(f.r, h[:])
	if err == io.EOF {
		return 0, nil, io.EOF
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: a header of %d bytes", errDamaged, n)
	}
	size := binary.LittleEndian.Uint32(h[:4])
	typ = h[8]
	if size > maxRecord || typ < recProbes || typ > recRestarts {
		return 0, nil, fmt.Errorf("%w: type %d of %d bytes", errDamaged, typ, size)
	}
	if cap(f.buf) < int(size) {
		f.buf = make([]byte, size)
	}
	payload = f.buf[:size]
	if _, err := io.ReadFull(f.r, payload); err != nil {
		return 0, nil, fmt.Errorf("%w: %d bytes cut short", errDamaged, size)
	}
	if crc32.Update(crc32.Checksum(h[8:9], castagnoli), castagnoli, payload) != binary.LittleEndian.Uint32(h[4:8]) {
		return 0, nil, fmt.Errorf("%w: CRC mismatch", errDamaged)
	}
	f.off += frameHeader + int64(size)
	return typ, payload, nil
}

// jrow is one decoded row of any table: the fields of its record's type
// are set.
type jrow struct {
	mon   int64
	probe model.ProbeSample // Stream: the store's stream ID
	count model.CounterSample
	roll  Rollup // Data aliases the record: copy it to keep it
	event EventRow
	rst   RestartRow
}

// at is the row's time (the watermark of its table; an event's start).
func (r *jrow) at(typ byte) int64 {
	switch typ {
	case recProbes:
		return r.probe.SentNs
	case recCounters:
		return r.count.TimeNs
	case recRollups:
		return r.roll.MinuteNs
	case recEvents:
		return r.event.Event.StartNs
	default:
		return r.rst.TimeNs
	}
}

// decodeRecord calls fn for each row of a record's payload. It allocates
// nothing per row but an event's strings: every count and length is
// checked against the bytes left before use.
func decodeRecord(typ byte, payload []byte, fn func(*jrow) error) error {
	d := varints{b: payload, kind: errDamaged, pre: "bad "}
	var r jrow
	r.mon = d.varint("monitor")
	n := d.uvarint("row count")
	if d.err == nil && (n == 0 || n > maxRecordRows || n > uint64(len(d.b))) {
		d.fail("row count")
	}
	var prev int64
	for i := uint64(0); i < n && d.err == nil; i++ {
		switch typ {
		case recProbes:
			p := &r.probe
			p.Stream = int32(d.uvarint("stream"))
			prev += d.varint("time")
			p.SentNs = prev
			p.Seq = uint32(d.uvarint("seq"))
			p.LatenessNs = d.varint("lateness")
			p.RTTNs = d.varint("rtt")
			p.FwdNs = d.varint("fwd")
			p.RevNs = d.varint("rev")
			fl := d.uvarint("flags")
			p.Lost, p.Late, p.Load = fl&flagLost != 0, fl&flagLate != 0, model.LoadState(fl>>2)
		case recCounters:
			prev += d.varint("time")
			r.count = model.CounterSample{TimeNs: prev, RxBytes: d.uvarint("rx"), TxBytes: d.uvarint("tx")}
		case recRollups:
			ro := &r.roll
			ro.Stream = int32(d.uvarint("stream"))
			prev += d.varint("minute")
			ro.MinuteNs = prev
			ro.Sent, ro.Lost, ro.Late = uint32(d.uvarint("sent")), uint32(d.uvarint("lost")), uint32(d.uvarint("late"))
			ro.SumNs, ro.SumSqNs = d.float("sum"), d.float("sum of squares")
			ro.MinNs, ro.MaxNs = d.varint("min"), d.varint("max")
			ro.Data = d.bytes("rollup data", MaxRollupData)
			if ro.Data == nil && d.err == nil {
				ro.Data = []byte{}
			}
		case recEvents:
			e := &r.event
			e.ID = int64(d.uvarint("event id"))
			e.Event = model.MonitorEvent{
				Kind:    model.EventKind(d.bytes("event kind", MaxNameLen)),
				StartNs: d.varint("start"),
				EndNs:   d.varint("end"),
				Stream:  int32(d.varint("event stream")),
				Text:    string(d.bytes("event text", MaxEventText)),
			}
			if det := d.bytes("event detail", maxRecord); d.err == nil {
				if err := json.Unmarshal(det, &e.Event.Detail); err != nil {
					d.fail("event detail")
				}
			}
			if fl := d.bytes("event flags", maxRecord); d.err == nil {
				if err := json.Unmarshal(fl, &e.Event.Flags); err != nil {
					d.fail("event flags")
				}
			}
		case recRestarts:
			r.rst = RestartRow{TimeNs: d.varint("time"), LastNs: d.varint("last"), Version: string(d.bytes("version", MaxNameLen))}
		default:
			d.fail("record type")
		}
		if d.err == nil {
			if err := fn(&r); err != nil {
				return err
			}
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("record end")
	}
	return d.err
}

// enc appends records to a buffer, splitting a table's rows into records
// of at most maxRecordRows rows and about maxRecordTarget bytes.
type enc struct {
	buf   []byte
	start int // the open record's frame; -1: none
	typ   byte
	mon   int64
	n     int
	cntAt int // where the open record's row count goes
	prev  int64
}

func (e *enc) open(typ byte, mon int64) {
	e.close()
	e.start, e.typ, e.mon, e.n, e.prev = len(e.buf), typ, mon, 0, 0
	e.buf = append(e.buf, make([]byte, frameHeader)...)
	e.buf = binary.AppendVarint(e.buf, mon)
	e.cntAt = len(e.buf)
	// The row count is a fixed 2-byte uvarint (up to 16383 rows), filled
	// at close, so rows append behind it.
	e.buf = append(e.buf, 0x80, 0)
}

func (e *enc) close() {
	switch {
	case e.typ == 0:
	case e.n == 0:
		e.buf = e.buf[:e.start]
	default:
		e.buf[e.cntAt], e.buf[e.cntAt+1] = byte(e.n&0x7f)|0x80, byte(e.n>>7)
		sealFrame(e.buf, e.start, e.typ)
	}
	e.typ, e.n = 0, 0
}

// row starts a row of typ: a new record when none is open, or the open
// one is full.
func (e *enc) row(typ byte, mon int64) {
	if e.typ != typ || e.mon != mon || e.n >= maxRecordRows || len(e.buf)-e.start >= maxRecordTarget {
		e.open(typ, mon)
	}
	e.n++
}

func (e *enc) time(t int64) {
	e.buf = binary.AppendVarint(e.buf, t-e.prev)
	e.prev = t
}

func (e *enc) str(s string) {
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *enc) probe(mon int64, p *model.ProbeSample) {
	e.row(recProbes, mon)
	e.buf = binary.AppendUvarint(e.buf, uint64(uint32(p.Stream)))
	e.time(p.SentNs)
	e.buf = binary.AppendUvarint(e.buf, uint64(p.Seq))
	for _, v := range []int64{p.LatenessNs, p.RTTNs, p.FwdNs, p.RevNs} {
		e.buf = binary.AppendVarint(e.buf, v)
	}
	var fl uint64
	if p.Lost {
		fl |= flagLost
	}
	if p.Late {
		fl |= flagLate
	}
	e.buf = binary.AppendUvarint(e.buf, fl|uint64(p.Load)<<2)
}

func (e *enc) counter(mon int64, c *model.CounterSample) {
	e.row(recCounters, mon)
	e.time(c.TimeNs)
	e.buf = binary.AppendUvarint(e.buf, c.RxBytes)
	e.buf = binary.AppendUvarint(e.buf, c.TxBytes)
}

func (e *enc) rollup(mon int64, r *Rollup) {
	e.row(recRollups, mon)
	e.buf = binary.AppendUvarint(e.buf, uint64(uint32(r.Stream)))
	e.time(r.MinuteNs)
	for _, v := range []uint32{r.Sent, r.Lost, r.Late} {
		e.buf = binary.AppendUvarint(e.buf, uint64(v))
	}
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(r.SumNs))
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(r.SumSqNs))
	e.buf = binary.AppendVarint(e.buf, r.MinNs)
	e.buf = binary.AppendVarint(e.buf, r.MaxNs)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(r.Data)))
	e.buf = append(e.buf, r.Data...)
}

func (e *enc) event(mon int64, id int64, ev *model.MonitorEvent) error {
	detail, err := json.Marshal(ev.Detail)
	if err != nil {
		return fmt.Errorf("store: encode event detail: %w", err)
	}
	flags, _ := json.Marshal(ev.Flags)
	e.row(recEvents, mon)
	e.buf = binary.AppendUvarint(e.buf, uint64(id))
	e.str(string(ev.Kind))
	e.buf = binary.AppendVarint(e.buf, ev.StartNs)
	e.buf = binary.AppendVarint(e.buf, ev.EndNs)
	e.buf = binary.AppendVarint(e.buf, int64(ev.Stream))
	e.str(ev.Text)
	e.str(string(detail))
	e.str(string(flags))
	return nil
}

func (e *enc) restart(mon int64, r *RestartRow) {
	e.row(recRestarts, mon)
	e.buf = binary.AppendVarint(e.buf, r.TimeNs)
	e.buf = binary.AppendVarint(e.buf, r.LastNs)
	e.str(r.Version)
}

// done closes the open record and returns the frames.
func (e *enc) done() []byte {
	e.close()
	return e.buf
}

// reset empties the buffer for the next batch, keeping its memory.
func (e *enc) reset() {
	e.buf, e.typ, e.n = e.buf[:0], 0, 0
}
