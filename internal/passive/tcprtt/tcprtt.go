// Package tcprtt estimates RTT passively from one TCP connection seen at an
// observer: the pping algorithm over TCP timestamps (component RTT per
// side and full RTT, metrics.md §8) and SEQ/ACK matching with Karn's rule.
// It keeps bounded rings per direction and allocates only when a ring
// grows, never per packet.
package tcprtt

import (
	"unsafe"

	"github.com/sonde-project/sonde/internal/prefetch"
)

// Sides of a connection: A sends in direction 0, B in direction 1.
const (
	DirAB = 0
	DirBA = 1
)

// maxPending bounds each ring: TSvals tick at most every 1 ms on Linux (or
// per µs with usec timestamps), so 4096 outstanding values cover > 4 s of
// RTT at 1 ms ticks; older entries are dropped, costing samples not memory.
const maxPending = 4096

type tsEntry struct {
	tsval uint32
	t     int64
	id    uint64 // caller's packet identity (ground-truth matching)
}

// ring is a FIFO of entries in sending order. Its buffer is a power of
// two long (16 doubled), so positions wrap with a mask: a division per
// access (tens of cycles each) is saved.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (r *ring[T]) push(v T) {
	if r.size == len(r.buf) {
		if len(r.buf) >= maxPending {
			r.pop() // oldest entry is lost
		} else {
			r.grow()
		}
	}
	r.buf[(r.head+r.size)&(len(r.buf)-1)] = v
	r.size++
}

func (r *ring[T]) grow() {
	n := max(16, 2*len(r.buf))
	nb := make([]T, n)
	for i := range r.size {
		nb[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
	}
	r.buf, r.head = nb, 0
}

func (r *ring[T]) front() *T { return &r.buf[r.head] }

// touch reads a byte of the front and back entries, the ones a packet
// reads next (Touch).
func (r *ring[T]) touch() uint64 {
	if r.size == 0 {
		return 0
	}
	return uint64(*(*uint8)(unsafe.Pointer(r.front()))) + uint64(*(*uint8)(unsafe.Pointer(r.back())))
}

// Touch reads the pending entries a packet of the connection reads next,
// all at once (passive's warm: independent loads overlap their cache
// misses); the sum means nothing.
func (m *Timestamps) Touch() uint64 { return m.pending[0].touch() + m.pending[1].touch() }

// Touch is Timestamps.Touch's.
func (m *SeqAck) Touch() uint64 { return m.pending[0].touch() + m.pending[1].touch() }

// prefetch starts the loads of the front and back entries (touch's,
// without waiting for them).
func (r *ring[T]) prefetch() {
	if r.size > 0 {
		prefetch.Lines(unsafe.Pointer(r.front()), 1)
		prefetch.Lines(unsafe.Pointer(r.back()), 1)
	}
}

// Prefetch starts the loads Touch makes, without waiting for them: for a
// connection whose packet comes after other work (passive's read-ahead).
func (m *Timestamps) Prefetch() { m.pending[0].prefetch(); m.pending[1].prefetch() }

// Prefetch is Timestamps.Prefetch's.
func (m *SeqAck) Prefetch() { m.pending[0].prefetch(); m.pending[1].prefetch() }

func (r *ring[T]) pop() {
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.size--
}

func (r *ring[T]) back() *T { return &r.buf[(r.head+r.size-1)&(len(r.buf)-1)] }

// after reports a > b in 32-bit serial arithmetic (TSval and SEQ wrap).
func after(a, b uint32) bool { return int32(a-b) > 0 }

// Sample is one RTT estimate.
type Sample struct {
	RTT int64 // ns
	// Dir is the direction of the packet that started the sample: its
	// echo came back from the other side, so the component covers the
	// path from the observer to the receiver of Dir and back.
	Dir uint8
	// StartID and EndID identify the two packets (the caller's identity
	// values), for ground-truth matching.
	StartID, EndID uint64
}

// Timestamps is the pping matcher for one connection.
type Timestamps struct {
	pending [2]ring[tsEntry]
	lastTS  [2]uint32 // last TSval recorded per direction
	haveTS  [2]bool
	lastEcr [2]uint32 // last TSecr matched per direction
	haveEcr [2]bool
	// Latest component sample per direction of the starting packet, for
	// the full RTT.
	comp     [2]Sample
	haveComp [2]bool
}

// Packet feeds one packet carrying a timestamp option. skipRecord is set for
// retransmissions (their TSval must not start a sample); skipMatch for pure
// duplicate ACKs (their TSecr must not end one). It returns a component
// sample and, when both sides have one, a full-RTT sample (the sum of the
// latest components; Dir is that of the new component).
func (m *Timestamps) Packet(dir uint8, t int64, tsval, tsecr uint32, id uint64, skipRecord, skipMatch bool) (comp, full Sample, gotComp, gotFull bool) {
	dir &= 1
	other := dir ^ 1
	if !skipMatch && tsecr != 0 && (!m.haveEcr[dir] || after(tsecr, m.lastEcr[dir])) {
		m.lastEcr[dir], m.haveEcr[dir] = tsecr, true
		p := &m.pending[other]
		for p.size > 0 && after(tsecr, p.front().tsval) {
			p.pop() // older values can no longer be echoed first
		}
		if p.size > 0 && p.front().tsval == tsecr {
			e := p.front()
			comp = Sample{RTT: t - e.t, Dir: other, StartID: e.id, EndID: id}
			gotComp = true
			p.pop()
			m.comp[other], m.haveComp[other] = comp, true
			if m.haveComp[dir] {
				full = comp
				full.RTT += m.comp[dir].RTT
				gotFull = true
			}
		}
	}
	if !skipRecord && (!m.haveTS[dir] || after(tsval, m.lastTS[dir])) {
		m.lastTS[dir], m.haveTS[dir] = tsval, true
		m.pending[dir].push(tsEntry{tsval: tsval, t: t, id: id})
	}
	return
}

type segEntry struct {
	end     uint32
	t       int64
	id      uint64
	retrans bool
}

// SeqAck matches data segments with the ACKs that cover them, skipping
// retransmitted segments (Karn's rule).
type SeqAck struct {
	pending [2]ring[segEntry]
	high    [2]uint32 // highest sequence end sent per direction
	haveSeq [2]bool
}

// Data feeds a segment carrying sequence space [seq, end) in dir. It returns
// whether the segment is (at least partly) a retransmission.
func (m *SeqAck) Data(dir uint8, t int64, seq, end uint32, id uint64) (retrans bool) {
	dir &= 1
	if seq == end {
		return false
	}
	if m.haveSeq[dir] && !after(end, m.high[dir]) {
		// Already sent: mark every pending segment it overlaps.
		p := &m.pending[dir]
		for i := range p.size {
			e := &p.buf[(p.head+i)&(len(p.buf)-1)]
			if after(e.end, seq) {
				e.retrans = true
			}
		}
		return true
	}
	if m.haveSeq[dir] && after(m.high[dir], seq) {
		retrans = true // starts below the high mark: partly resent
		if p := &m.pending[dir]; p.size > 0 {
			p.back().retrans = true
		}
	}
	m.high[dir], m.haveSeq[dir] = end, true
	m.pending[dir].push(segEntry{end: end, t: t, id: id, retrans: retrans})
	return retrans
}

// Ack feeds a cumulative ACK travelling in dir (acknowledging data of the
// other direction). A sample comes from the newest segment it covers, if
// the ACK ends exactly at that segment and the segment was never resent.
func (m *SeqAck) Ack(dir uint8, t int64, ack uint32, id uint64) (s Sample, ok bool) {
	dir &= 1
	other := dir ^ 1
	p := &m.pending[other]
	var last segEntry
	found := false
	for p.size > 0 && !after(p.front().end, ack) {
		last = *p.front()
		found = true
		p.pop()
	}
	if !found || last.end != ack || last.retrans {
		return s, false
	}
	return Sample{RTT: t - last.t, Dir: other, StartID: last.id, EndID: id}, true
}
