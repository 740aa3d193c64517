package emulator

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Ground-truth file format (docs/emulator.md): a header, then fixed-size
// little-endian records, one per packet, in the order the packets' fates
// were decided (drop or delivery), not in arrival order.
const (
	TruthMagic      = "SONDEGT\x00"
	TruthVersion    = 1
	TruthRecordSize = 80
	truthFixedHead  = 8 + 2 + 2 + 4 + 8
)

// Direction of a packet through a link: Up is from the A (client) side to
// the B (server) side.
const (
	Up   uint8 = 0
	Down uint8 = 1
)

// TruthLink describes one emulated link in a ground-truth header.
type TruthLink struct {
	Name         string `json:"name"`
	A            string `json:"a"` // node on the client side
	B            string `json:"b"` // node on the server side
	Up           Params `json:"up"`
	Down         Params `json:"down"`
	UpSchedule   []Step `json:"up_schedule,omitempty"`
	DownSchedule []Step `json:"down_schedule,omitempty"`
}

// TruthHeader is the JSON part of the header.
type TruthHeader struct {
	// StartUnixNs is the wall-clock time of model time 0; every record time
	// is nanoseconds since then on the emulator's monotonic clock.
	StartUnixNs int64       `json:"start_unix_ns"`
	Seed        uint64      `json:"seed"`
	Profile     string      `json:"profile,omitempty"`
	Links       []TruthLink `json:"links"`
}

// Record is one packet's ground truth. Times are nanoseconds since the
// header's start; -1 means the event did not happen.
type Record struct {
	Seq     uint64
	Arrival time.Duration
	Dequeue time.Duration
	Due     time.Duration
	Sent    time.Duration
	// MediumWait is the packet's wait for a half-duplex medium held by
	// the other direction (0 on a full-duplex link).
	MediumWait time.Duration
	Hash       uint64
	QPackets   uint32
	QBytes     uint32
	IPID       uint32
	TCPSeq     uint32
	TSval      uint32
	Length     uint16
	Link       uint8
	Dir        uint8
	Fate       Fate
	Flags      Flags
	Proto      uint8
}

// NewRecord builds the record of a packet whose fate is decided.
func NewRecord(p *Packet, link, dir uint8) Record {
	id := PacketIdentity(p.Data)
	return Record{
		Seq: p.Seq, Arrival: p.Arrival, Dequeue: p.Dequeue, Due: p.Due, Sent: p.Sent, MediumWait: p.MediumWait,
		Hash: id.Hash, QPackets: p.QPackets, QBytes: p.QBytes,
		IPID: id.IPID, TCPSeq: id.TCPSeq, TSval: id.TSval,
		Length: uint16(min(len(p.Data), 65535)), Link: link, Dir: dir,
		Fate: p.Fate, Flags: p.Flags | id.Flags, Proto: id.Proto,
	}
}

// Delay is the one-way delay through the link (delivery − arrival).
func (r Record) Delay() time.Duration { return r.Sent - r.Arrival }

// Sojourn is the time spent in the queue.
func (r Record) Sojourn() time.Duration { return r.Dequeue - r.Arrival }

// Lateness is how late the driver wrote the packet (Sent − Due).
func (r Record) Lateness() time.Duration { return r.Sent - r.Due }

func (r *Record) marshal(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.Seq)
	le.PutUint64(b[8:], uint64(r.Arrival))
	le.PutUint64(b[16:], uint64(r.Dequeue))
	le.PutUint64(b[24:], uint64(r.Due))
	le.PutUint64(b[32:], uint64(r.Sent))
	le.PutUint64(b[40:], r.Hash)
	le.PutUint32(b[48:], r.QPackets)
	le.PutUint32(b[52:], r.QBytes)
	le.PutUint32(b[56:], r.IPID)
	le.PutUint32(b[60:], r.TCPSeq)
	le.PutUint32(b[64:], r.TSval)
	le.PutUint16(b[68:], r.Length)
	b[70], b[71], b[72], b[73], b[74] = r.Link, r.Dir, uint8(r.Fate), uint8(r.Flags), r.Proto
	// Bytes 75–79, zero in files from before half duplex: the medium wait
	// in ns, 40 bits (18 minutes; longer saturates).
	w := uint64(max(r.MediumWait, 0))
	w = min(w, maxMediumWait)
	for i := range 5 {
		b[75+i] = byte(w >> (8 * i))
	}
}

func (r *Record) unmarshal(b []byte) {
	le := binary.LittleEndian
	r.Seq = le.Uint64(b[0:])
	r.Arrival = time.Duration(le.Uint64(b[8:]))
	r.Dequeue = time.Duration(le.Uint64(b[16:]))
	r.Due = time.Duration(le.Uint64(b[24:]))
	r.Sent = time.Duration(le.Uint64(b[32:]))
	r.Hash = le.Uint64(b[40:])
	r.QPackets = le.Uint32(b[48:])
	r.QBytes = le.Uint32(b[52:])
	r.IPID = le.Uint32(b[56:])
	r.TCPSeq = le.Uint32(b[60:])
	r.TSval = le.Uint32(b[64:])
	r.Length = le.Uint16(b[68:])
	r.Link, r.Dir, r.Fate, r.Flags, r.Proto = b[70], b[71], Fate(b[72]), Flags(b[73]), b[74]
	var w uint64
	for i := range 5 {
		w |= uint64(b[75+i]) << (8 * i)
	}
	r.MediumWait = time.Duration(w)
}

// maxMediumWait is the largest medium wait a record holds (40 bits of ns).
const maxMediumWait = 1<<40 - 1

// TruthWriter writes a ground-truth file. It is safe for concurrent use
// (both directions of every link write to one file). Write only appends to
// memory: a background goroutine does the file I/O, so that a slow disk
// never stalls packet forwarding (a blocked write() once held packets for
// 100 ms).
type TruthWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	cur     []byte   // records being filled
	pending [][]byte // full chunks waiting for the writer goroutine
	closing bool
	err     error
	n       uint64
	w       io.Writer
	c       io.Closer
	done    chan struct{}
	flushed uint64 // chunks written, for Flush
	queued  uint64 // chunks handed over
}

const truthChunk = 256 << 10

// NewTruthWriter writes the header to w. If w is an io.Closer, Close closes
// it.
func NewTruthWriter(w io.Writer, h TruthHeader) (*TruthWriter, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("truth header: %w", err)
	}
	head := make([]byte, truthFixedHead, truthFixedHead+len(js))
	copy(head, TruthMagic)
	binary.LittleEndian.PutUint16(head[8:], TruthVersion)
	binary.LittleEndian.PutUint16(head[10:], TruthRecordSize)
	binary.LittleEndian.PutUint32(head[12:], uint32(len(js)))
	binary.LittleEndian.PutUint64(head[16:], uint64(h.StartUnixNs))
	head = append(head, js...)
	if _, err := w.Write(head); err != nil {
		return nil, fmt.Errorf("truth header: %w", err)
	}
	t := &TruthWriter{w: w, done: make(chan struct{}), cur: make([]byte, 0, truthChunk)}
	t.cond = sync.NewCond(&t.mu)
	if c, ok := w.(io.Closer); ok {
		t.c = c
	}
	go t.loop()
	return t, nil
}

// loop writes full chunks to the file.
func (t *TruthWriter) loop() {
	defer close(t.done)
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		for len(t.pending) == 0 && !t.closing {
			t.cond.Wait()
		}
		if len(t.pending) == 0 && t.closing {
			return
		}
		chunks := t.pending
		t.pending = nil
		t.mu.Unlock()
		var err error
		for _, c := range chunks {
			if err == nil {
				_, err = t.w.Write(c)
			}
		}
		t.mu.Lock()
		if err != nil && t.err == nil {
			t.err = err
		}
		t.flushed += uint64(len(chunks))
		t.cond.Broadcast()
	}
}

// handOver queues the current chunk for writing; t.mu is held.
func (t *TruthWriter) handOver() {
	if len(t.cur) == 0 {
		return
	}
	t.pending = append(t.pending, t.cur)
	t.queued++
	t.cur = make([]byte, 0, truthChunk)
	t.cond.Broadcast()
}

// Write appends a record. The first file error sticks and is returned by
// Flush and Close.
func (t *TruthWriter) Write(r Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return
	}
	n := len(t.cur)
	t.cur = t.cur[:n+TruthRecordSize]
	r.marshal(t.cur[n:])
	t.n++
	if len(t.cur)+TruthRecordSize > cap(t.cur) {
		t.handOver()
	}
}

// Count is the number of records written.
func (t *TruthWriter) Count() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Flush writes every record appended so far to the file.
func (t *TruthWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.handOver()
	want := t.queued
	for t.flushed < want && t.err == nil {
		t.cond.Wait()
	}
	return t.err
}

// Close flushes, stops the writer goroutine and closes the file.
func (t *TruthWriter) Close() error {
	err := t.Flush()
	t.mu.Lock()
	t.closing = true
	t.cond.Broadcast()
	t.mu.Unlock()
	<-t.done
	if t.c != nil {
		err = errors.Join(err, t.c.Close())
	}
	return err
}

// TruthReader reads a ground-truth file.
type TruthReader struct {
	r      *bufio.Reader
	Header TruthHeader
	size   int
	buf    []byte
}

// NewTruthReader reads and checks the header.
func NewTruthReader(r io.Reader) (*TruthReader, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var head [truthFixedHead]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, fmt.Errorf("truth file header: %w", err)
	}
	if string(head[:8]) != TruthMagic {
		return nil, errors.New("not a sonde ground-truth file (bad magic)")
	}
	if v := binary.LittleEndian.Uint16(head[8:]); v != TruthVersion {
		return nil, fmt.Errorf("truth file version %d, this reader knows %d", v, TruthVersion)
	}
	size := int(binary.LittleEndian.Uint16(head[10:]))
	if size < TruthRecordSize {
		return nil, fmt.Errorf("truth record size %d < %d", size, TruthRecordSize)
	}
	js := make([]byte, binary.LittleEndian.Uint32(head[12:]))
	if _, err := io.ReadFull(br, js); err != nil {
		return nil, fmt.Errorf("truth file header: %w", err)
	}
	t := &TruthReader{r: br, size: size, buf: make([]byte, size)}
	if err := json.Unmarshal(js, &t.Header); err != nil {
		return nil, fmt.Errorf("truth file header: %w", err)
	}
	t.Header.StartUnixNs = int64(binary.LittleEndian.Uint64(head[16:]))
	return t, nil
}

// Next returns the next record, or io.EOF at the end. A truncated last
// record (a crashed writer) is reported as io.ErrUnexpectedEOF.
func (t *TruthReader) Next() (Record, error) {
	var r Record
	if _, err := io.ReadFull(t.r, t.buf); err != nil {
		return r, err
	}
	r.unmarshal(t.buf)
	return r, nil
}

// ReadAll reads every remaining record.
func (t *TruthReader) ReadAll() ([]Record, error) {
	var out []Record
	for {
		r, err := t.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
}

// ReadTruthFile reads a whole ground-truth file: its header and records.
func ReadTruthFile(path string) (TruthHeader, []Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return TruthHeader{}, nil, err
	}
	defer f.Close()
	t, err := NewTruthReader(f)
	if err != nil {
		return TruthHeader{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	recs, err := t.ReadAll()
	if err != nil {
		return t.Header, recs, fmt.Errorf("%s: %w", path, err)
	}
	return t.Header, recs, nil
}
