package emulator

import (
	"math"
	"time"
)

// never is the time of an event that will not happen.
const never = time.Duration(math.MaxInt64)

// dropFunc receives a packet the queue discards, with the reason.
type dropFunc func(p *Packet, f Fate)

// qdisc is a queue discipline. enqueue returns false when it refuses the
// arriving packet (p.Fate says why); either method may discard other queued
// packets through drop. Times are exact model times.
type qdisc interface {
	enqueue(p *Packet, now time.Duration, drop dropFunc) bool
	dequeue(now time.Duration, drop dropFunc) *Packet
	len() int
	bytes() int
	// setParams applies new parameters (limits, AQM settings) from a
	// schedule step.
	setParams(p *Params)
	// nextTimer is the time of the discipline's next periodic event (PIE's
	// probability update), never if none; timer runs it.
	nextTimer() time.Duration
	timer(now time.Duration)
}

func newQdisc(p *Params, seed uint64) qdisc {
	switch p.qdisc() {
	case CoDel:
		return newCoDelQueue(p)
	case PIE:
		return newPIE(p, seed)
	case FQCoDel:
		return newFQCoDel(p, seed)
	}
	return &dropTail{limit: newLimit(p)}
}

// limit is a queue bound in packets and/or bytes.
type limit struct{ pkts, bytes int }

func newLimit(p *Params) limit {
	pk, by := p.limits()
	return limit{pk, by}
}

// full reports whether a queue holding n packets and b bytes cannot take a
// packet of size more.
func (l limit) full(n, b, size int) bool {
	return (l.pkts > 0 && n+1 > l.pkts) || (l.bytes > 0 && b+size > l.bytes)
}

// fifo is a FIFO of packets with a byte count.
type fifo struct {
	buf   []*Packet
	head  int
	nbyte int
}

func (q *fifo) push(p *Packet) {
	if q.head > 0 && q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	} else if q.head > 64 && q.head*2 >= len(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, p)
	q.nbyte += len(p.Data)
}

func (q *fifo) peek() *Packet {
	if q.head == len(q.buf) {
		return nil
	}
	return q.buf[q.head]
}

func (q *fifo) pop() *Packet {
	if q.head == len(q.buf) {
		return nil
	}
	p := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	q.nbyte -= len(p.Data)
	return p
}

func (q *fifo) len() int   { return len(q.buf) - q.head }
func (q *fifo) bytes() int { return q.nbyte }

// dropTail refuses arrivals when the queue is full.
type dropTail struct {
	q     fifo
	limit limit
}

func (d *dropTail) enqueue(p *Packet, _ time.Duration, _ dropFunc) bool {
	if d.limit.full(d.q.len(), d.q.bytes(), len(p.Data)) {
		p.Fate = DropQueue
		return false
	}
	d.q.push(p)
	return true
}

func (d *dropTail) dequeue(time.Duration, dropFunc) *Packet { return d.q.pop() }
func (d *dropTail) len() int                                { return d.q.len() }
func (d *dropTail) bytes() int                              { return d.q.bytes() }
func (d *dropTail) setParams(p *Params)                     { d.limit = newLimit(p) }
func (d *dropTail) nextTimer() time.Duration                { return never }
func (d *dropTail) timer(time.Duration)                     {}
