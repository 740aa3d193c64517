package passive

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/sonde-project/sonde/internal/model"
)

// Finished records of a long capture (Config.Spill). The text and JSON
// outputs list every connection in start order, but connections finish in
// another order and a capture of hours has millions of them: kept in
// memory, they were what grew with the capture's length. So records are
// buffered in runs of spillRun; a full run is sorted and written (a
// compact binary encoding, spillcodec.go) to one temporary file, and the
// outputs read the runs back merged (a k-way merge: one buffered reader
// per run). Memory is then a run per record
// kind plus a read buffer per run, whatever the capture's length. A capture
// with fewer records than a run never touches the disk: its records are
// the analysis's TCP and QUIC as before.
//
// The order is the one Finish gives records kept in memory: start time,
// then the ends' names, then the order they finished (runs are written in
// finishing order and the merge breaks ties by run).
//
// HTTP page loads group a client's connections across the capture: the
// records with HTTP exchanges are also kept in memory (http1 bounds the
// exchanges per connection).

// spillRun records are sorted and written at a time (~1-2 MB of TCP
// records).
const spillRun = 2048

// spillReadBuf is each run's read buffer during the merge.
const spillReadBuf = 16 << 10

type recordSpill struct {
	mu  sync.Mutex // shards finish flows concurrently
	run int        // records a run (spillRun; tests make it small)
	dir string
	f   *os.File
	// unlink: the file could not be removed while open (not Unix):
	// close removes it.
	unlink bool
	off    int64
	err    error // the first write error: records stay in memory after it
	tcp    spillRuns[model.TCPConn]
	quic   spillRuns[model.QUICConn]
	http   []model.TCPConn // records with HTTP exchanges, for the page loads
	// extra holds what spilled TCP records point to (spillcodec.go).
	extra []tcpExtra
	enc   spillEnc     // the encoding buffer, reused
	on    func(Record) // Config.OnSpill
}

// spillRuns is one record kind's runs on disk and the run being filled.
type spillRuns[T any] struct {
	key  func(*T) (float64, string, string)
	enc  func(*recordSpill, *spillEnc, *T)
	dec  func(*recordSpill, *spillDec, *T)
	buf  []T
	runs []spillSpan
	n    int
}

type spillSpan struct{ off, len int64 }

func newRecordSpill(dir string) *recordSpill {
	return &recordSpill{dir: dir, run: spillRun,
		tcp:  spillRuns[model.TCPConn]{key: tcpOrder, enc: encodeTCPRecord, dec: decodeTCPRecord},
		quic: spillRuns[model.QUICConn]{key: quicOrder, enc: encodeQUICRecord, dec: decodeQUICRecord}}
}

func tcpOrder(c *model.TCPConn) (float64, string, string)   { return c.StartS, c.A, c.B }
func quicOrder(c *model.QUICConn) (float64, string, string) { return c.StartS, c.Client, c.Server }

func (s *recordSpill) addTCP(r *model.TCPConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.HTTP != nil {
		s.http = append(s.http, *r)
	}
	if s.on != nil {
		s.on(Record{TCP: r})
	}
	addRecord(s, &s.tcp, r)
}

func (s *recordSpill) addQUIC(r *model.QUICConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on != nil {
		s.on(Record{QUIC: r})
	}
	addRecord(s, &s.quic, r)
}

func addRecord[T any](s *recordSpill, rs *spillRuns[T], r *T) {
	rs.buf = append(rs.buf, *r)
	rs.n++
	if len(rs.buf) >= s.run && s.err == nil {
		if err := writeRun(s, rs); err != nil {
			s.err = err // keep the records in memory from now on
		}
	}
}

// writeRun sorts the buffered records and appends them to the file as one
// run: each record its length and its encoding.
func writeRun[T any](s *recordSpill, rs *spillRuns[T]) error {
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "sonde-analyze-*.records")
		if err != nil {
			return fmt.Errorf("spilling records: %w", err)
		}
		// Unlinked at once (on Unix): nothing is left behind, whatever
		// ends the process.
		s.unlink = os.Remove(f.Name()) != nil
		s.f = f
	}
	byStart(rs.buf, rs.key)
	w := bufio.NewWriterSize(io.NewOffsetWriter(s.f, s.off), 64<<10)
	var n int64
	e := &s.enc
	for i := range rs.buf {
		e.b = e.b[:0]
		rs.enc(s, e, &rs.buf[i])
		k := 0
		for v := uint64(len(e.b)); ; v >>= 7 {
			k++
			if v < 0x80 {
				w.WriteByte(byte(v)) // a uvarint; an error is Write's too
				break
			}
			w.WriteByte(byte(v) | 0x80)
		}
		m, err := w.Write(e.b)
		if err != nil {
			return fmt.Errorf("spilling records: %w", err)
		}
		n += int64(k + m)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spilling records: %w", err)
	}
	if cap(e.b) > 1<<20 {
		e.b = nil // a long connection's series: not kept
	}
	rs.runs = append(rs.runs, spillSpan{s.off, n})
	s.off += n
	clear(rs.buf) // the series and strings go with the records
	rs.buf = rs.buf[:0]
	return nil
}

// spilled reports whether any run went to the file: if not, the records
// are all in the buffers.
func (s *recordSpill) spilled() bool { return len(s.tcp.runs)+len(s.quic.runs) > 0 }

// finish sorts the runs still in memory.
func (s *recordSpill) finish() {
	byStart(s.tcp.buf, s.tcp.key)
	byStart(s.quic.buf, s.quic.key)
	byStart(s.http, tcpOrder)
}

// close removes the file.
func (s *recordSpill) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if s.unlink {
		err = errors.Join(err, os.Remove(s.f.Name()))
	}
	s.f = nil
	return err
}

// Len, EachTCP and EachQUIC make it a model.RecordSpill.
func (s *recordSpill) Len() (int, int) { return s.tcp.n, s.quic.n }

func (s *recordSpill) EachTCP(fn func(*model.TCPConn) error) error { return each(s, &s.tcp, fn) }

func (s *recordSpill) EachQUIC(fn func(*model.QUICConn) error) error { return each(s, &s.quic, fn) }

// mergeHead is one run's next record in the merge.
type mergeHead[T any] struct {
	rec  *T
	run  int
	r    *bufio.Reader // nil: the run in memory
	buf  []byte        // the record being decoded
	d    spillDec
	next int // in the memory run
	// own is the record each of the run's is decoded into: the callers
	// of EachTCP and EachQUIC do not keep it (a record allocated each
	// time was a tenth of a run's allocations).
	own T
}

type mergeHeap[T any] struct {
	h   []*mergeHead[T]
	key func(*T) (float64, string, string)
}

func (m *mergeHeap[T]) Len() int { return len(m.h) }
func (m *mergeHeap[T]) Less(i, j int) bool {
	ti, ai, bi := m.key(m.h[i].rec)
	tj, aj, bj := m.key(m.h[j].rec)
	return cmp.Or(cmp.Compare(ti, tj), strings.Compare(ai, aj), strings.Compare(bi, bj), cmp.Compare(m.h[i].run, m.h[j].run)) < 0
}
func (m *mergeHeap[T]) Swap(i, j int) { m.h[i], m.h[j] = m.h[j], m.h[i] }
func (m *mergeHeap[T]) Push(x any)    { m.h = append(m.h, x.(*mergeHead[T])) }
func (m *mergeHeap[T]) Pop() any {
	x := m.h[len(m.h)-1]
	m.h = m.h[:len(m.h)-1]
	return x
}

// advance loads the head's next record; false at the run's end.
func (h *mergeHead[T]) advance(s *recordSpill, rs *spillRuns[T]) (bool, error) {
	buf := rs.buf
	if h.r == nil {
		if h.next >= len(buf) {
			return false, nil
		}
		h.rec = &buf[h.next]
		h.next++
		return true, nil
	}
	n, err := binary.ReadUvarint(h.r)
	if err == io.EOF {
		return false, nil
	}
	if err == nil && n > maxSpillRecord {
		err = errSpillRecord
	}
	if err == nil {
		if uint64(cap(h.buf)) < n {
			h.buf = make([]byte, n)
		}
		h.buf = h.buf[:n]
		_, err = io.ReadFull(h.r, h.buf)
	}
	r := &h.own
	if err == nil {
		h.d = spillDec{b: h.buf} // in the head: the call through rs.dec would move a local to the heap
		rs.dec(s, &h.d, r)
		err = h.d.err()
	}
	if err != nil {
		return false, fmt.Errorf("reading spilled records: %w", err)
	}
	h.rec = r
	return true, nil
}

func each[T any](s *recordSpill, rs *spillRuns[T], fn func(*T) error) error {
	m := &mergeHeap[T]{key: rs.key}
	for i, sp := range rs.runs {
		r := bufio.NewReaderSize(io.NewSectionReader(s.f, sp.off, sp.len), spillReadBuf)
		m.h = append(m.h, &mergeHead[T]{run: i, r: r})
	}
	m.h = append(m.h, &mergeHead[T]{run: len(rs.runs)})
	heads := m.h
	m.h = m.h[:0]
	for _, h := range heads {
		ok, err := h.advance(s, rs)
		if err != nil {
			return err
		}
		if ok {
			m.h = append(m.h, h)
		}
	}
	heap.Init(m)
	for m.Len() > 0 {
		h := m.h[0]
		if err := fn(h.rec); err != nil {
			return err
		}
		ok, err := h.advance(s, rs)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(m, 0)
		} else {
			heap.Pop(m)
		}
	}
	return nil
}

var _ model.RecordSpill = (*recordSpill)(nil)
