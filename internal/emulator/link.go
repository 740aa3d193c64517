package emulator

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Counters are a direction's live statistics.
type Counters struct {
	Arrived    uint64 `json:"arrived"`
	Delivered  uint64 `json:"delivered"`
	BytesIn    uint64 `json:"bytes_in"`
	BytesOut   uint64 `json:"bytes_out"`
	DropLoss   uint64 `json:"drop_loss"`
	DropQueue  uint64 `json:"drop_queue"`
	DropAQM    uint64 `json:"drop_aqm"`
	DropMTU    uint64 `json:"drop_mtu"`
	Marked     uint64 `json:"marked"`
	Duplicated uint64 `json:"duplicated"`
	Remarked   uint64 `json:"remarked"`
	// MediumWaits counts the packets that waited for a half-duplex
	// medium held by the other direction, MediumWait their total wait.
	MediumWaits  uint64        `json:"medium_waits,omitempty"`
	MediumWait   time.Duration `json:"medium_wait_ns,omitempty"`
	BacklogPkts  int           `json:"backlog_packets"`
	BacklogBytes int           `json:"backlog_bytes"`
	InFlight     int           `json:"in_flight"` // serialised, not yet delivered
}

// Link is one direction of an emulated link:
//
//	arrival → MTU check → random loss → duplication → queue (qdisc, limit)
//	→ serialisation at RateBps → propagation Delay ± jitter → delivery
//
// It is a discrete-event model driven by the caller's clock: Enqueue and
// Release take the current time, every internal event (a dequeue, a PIE
// update, a schedule step) happens at its exact model time, so a late
// driver never changes the outcome, only when it sees it. A Link is not
// safe for concurrent use.
type Link struct {
	p        Params
	schedule []Step
	nextStep int

	q     qdisc
	loss  lossModel
	dup   *rand.Rand
	jit   *rand.Rand
	drop  dropFunc
	clone func(*Packet) *Packet

	now       time.Duration // time of the event being processed
	busyUntil time.Duration // serialiser free from (half duplex: this direction's last packet sent by then)
	lastDue   time.Duration
	seq       uint64
	fifo      fifo    // deliveries in order (Reorder off)
	pq        dueHeap // deliveries by due time (Reorder on)
	c         Counters

	// m is the medium shared with the other direction of a half-duplex
	// link (nil: this direction has its own serialiser); the HalfDuplex
	// that owns both directions decides when the queue's head is sent.
	m *medium
	// waitFrom is when the queue last went from empty to backlogged, or
	// when its last packet was sent: with busyUntil, since when the head
	// has wanted the medium (wantsAt).
	waitFrom time.Duration
}

// Config builds a Link.
type Config struct {
	Params   Params
	Schedule []Step
	Seed     uint64
	// Dropped receives every packet the link discards after accepting it
	// (AQM drops, FQ overflow) and every arriving packet it refuses; the
	// packet's Fate says why. Afterwards the link no longer refers to it.
	Dropped func(*Packet)
	// Clone copies a packet for the duplication model; nil allocates.
	Clone func(*Packet) *Packet
}

// NewLink validates the configuration and returns a Link at time 0. A
// half-duplex direction needs its other direction: NewHalfDuplex builds
// both.
func NewLink(c Config) (*Link, error) {
	if c.Params.HalfDuplex {
		return nil, errors.New("duplex=half: the two directions share a medium (NewHalfDuplex builds them)")
	}
	return newLink(c)
}

func newLink(c Config) (*Link, error) {
	if err := c.Params.Validate(); err != nil {
		return nil, err
	}
	if err := ValidateSchedule(c.Params, c.Schedule); err != nil {
		return nil, err
	}
	l := &Link{
		p:        c.Params,
		schedule: c.Schedule,
		q:        newQdisc(&c.Params, c.Seed),
		loss:     newLossModel(c.Seed),
		dup:      newStream(c.Seed, streamDup),
		jit:      newStream(c.Seed, streamJitter),
		clone:    c.Clone,
	}
	if l.clone == nil {
		l.clone = func(p *Packet) *Packet {
			return &Packet{Data: append([]byte(nil), p.Data...)}
		}
	}
	dropped := c.Dropped
	if dropped == nil {
		dropped = func(*Packet) {}
	}
	l.drop = func(p *Packet, f Fate) {
		p.Fate = f
		if f == DropAQM && p.Dequeue < 0 {
			p.Dequeue = l.now // CoDel drops at the head of the queue
		}
		l.count(p)
		dropped(p)
	}
	return l, nil
}

// Params returns the parameters in force.
func (l *Link) Params() Params { return l.p }

// Counters returns the live statistics.
func (l *Link) Counters() Counters {
	c := l.c
	c.BacklogPkts, c.BacklogBytes = l.q.len(), l.q.bytes()
	c.InFlight = l.fifo.len() + l.pq.Len()
	return c
}

func (l *Link) count(p *Packet) {
	switch p.Fate {
	case DropLoss:
		l.c.DropLoss++
	case DropQueue:
		l.c.DropQueue++
	case DropAQM:
		l.c.DropAQM++
	case DropMTU:
		l.c.DropMTU++
	}
}

// Enqueue offers a packet arriving at now (which must not go backwards).
// It returns false if the link refused it at once: p has then been passed
// to Dropped, with p.Fate saying why (for DropMTU, Dropped may answer with
// an ICMP error, see TooBig), and belongs to the caller again.
func (l *Link) Enqueue(p *Packet, now time.Duration) bool {
	l.advance(now)
	l.now = now
	l.seq++
	p.reset()
	p.Seq, p.Arrival = l.seq, now
	p.QPackets, p.QBytes = uint32(l.q.len()), uint32(l.q.bytes())
	switch ecnBits(p.Data) {
	case 1, 2:
		p.Flags |= FlagECT
	case 3:
		p.Flags |= FlagECT | FlagCEIn
	}
	l.c.Arrived++
	l.c.BytesIn += uint64(len(p.Data))
	if l.p.MTU > 0 && len(p.Data) > l.p.MTU {
		l.drop(p, DropMTU)
		return false
	}
	if l.loss.lost(&l.p, len(p.Data)) {
		l.drop(p, DropLoss)
		return false
	}
	if r := l.p.Remark; r != nil && RemarkDSCP(p.Data, r.From, r.To) {
		l.c.Remarked++
	}
	var dup *Packet
	if l.p.Duplicate > 0 && l.dup.Float64() < l.p.Duplicate {
		dup = l.clone(p)
	}
	ok := l.offer(p, now)
	if dup != nil {
		l.seq++
		l.c.Duplicated++
		dup.reset()
		dup.Seq, dup.Arrival = l.seq, now
		dup.QPackets, dup.QBytes = uint32(l.q.len()), uint32(l.q.bytes())
		dup.Flags = p.Flags&(FlagECT|FlagCEIn) | FlagDuplicate
		l.offer(dup, now)
	}
	return ok
}

// offer puts p in the queue and starts serialising it if the link is idle
// (half duplex: the medium decides, see HalfDuplex).
func (l *Link) offer(p *Packet, now time.Duration) bool {
	if l.m != nil && l.q.len() == 0 {
		l.waitFrom = now
	}
	if !l.q.enqueue(p, now, l.drop) {
		l.drop(p, p.Fate)
		return false
	}
	if l.m == nil && l.busyUntil <= now {
		l.serve(now)
	}
	return true
}

// serve dequeues the next packet at time t (the link is free at t) and
// schedules its delivery.
func (l *Link) serve(t time.Duration) {
	l.now = t
	p := l.q.dequeue(t, l.drop)
	if p == nil {
		return
	}
	p.Dequeue = t
	tx := l.p.TxTime(len(p.Data))
	if l.m != nil {
		// The time the head spent ready while the other direction had
		// the medium.
		if w := t - max(p.Arrival, l.busyUntil); w > 0 {
			p.MediumWait = w
			l.c.MediumWaits++
			l.c.MediumWait += w
		}
		l.m.busyUntil, l.m.last = t+tx, l
		l.waitFrom = t
	}
	l.busyUntil = t + tx
	due := max(l.busyUntil+l.p.Delay+jitter(l.jit, &l.p), l.busyUntil)
	if l.p.Reorder {
		p.Due = due
		heap.Push(&l.pq, p)
		return
	}
	due = max(due, l.lastDue)
	l.lastDue = due
	p.Due = due
	l.fifo.push(p)
}

// nextInternal is the time of the next event inside the link (half
// duplex: the medium's grants are HalfDuplex's events, not the link's).
func (l *Link) nextInternal() time.Duration {
	t := l.q.nextTimer()
	if l.nextStep < len(l.schedule) {
		t = min(t, l.schedule[l.nextStep].At)
	}
	if l.m == nil && l.q.len() > 0 {
		t = min(t, l.busyUntil)
	}
	return t
}

// advance runs every internal event up to and including now, in time
// order: schedule steps first, then queue timers, then the serialiser.
func (l *Link) advance(now time.Duration) {
	for {
		t := l.nextInternal()
		if t > now {
			return
		}
		switch {
		case l.nextStep < len(l.schedule) && l.schedule[l.nextStep].At == t:
			l.p = l.schedule[l.nextStep].Params
			l.q.setParams(&l.p)
			l.nextStep++
		case l.q.nextTimer() == t:
			l.q.timer(t)
		default:
			l.serve(t)
		}
	}
}

// Next returns the time of the next thing the caller must act on: an
// internal event or a delivery. ok is false when the link is empty and has
// nothing scheduled.
func (l *Link) Next() (t time.Duration, ok bool) {
	t = l.nextInternal()
	if p := l.fifo.peek(); p != nil {
		t = min(t, p.Due)
	}
	if l.pq.Len() > 0 {
		t = min(t, l.pq[0].Due)
	}
	return t, t != never
}

// Release advances the model to now and appends to out every packet whose
// delivery is due by now, in delivery order. Their Fate is Delivered; the
// caller sets Sent when it writes them.
func (l *Link) Release(now time.Duration, out []*Packet) []*Packet {
	l.advance(now)
	for {
		var p *Packet
		if h := l.fifo.peek(); h != nil && h.Due <= now {
			p = l.fifo.pop()
		} else if l.pq.Len() > 0 && l.pq[0].Due <= now {
			p = heap.Pop(&l.pq).(*Packet)
		} else {
			return out
		}
		p.Fate = Delivered
		if p.Flags&FlagMarked != 0 {
			l.c.Marked++
		}
		l.c.Delivered++
		l.c.BytesOut += uint64(len(p.Data))
		out = append(out, p)
	}
}

// Flush removes every packet still inside the link (queued or in flight),
// e.g. at shutdown, passing each to Dropped with Fate DropShutdown.
func (l *Link) Flush() {
	for {
		p := l.q.dequeue(l.busyUntil, l.drop)
		if p == nil {
			break
		}
		l.drop(p, DropShutdown)
	}
	for p := l.fifo.pop(); p != nil; p = l.fifo.pop() {
		l.drop(p, DropShutdown)
	}
	for l.pq.Len() > 0 {
		l.drop(heap.Pop(&l.pq).(*Packet), DropShutdown)
	}
}

// String summarises the parameters in force.
func (p Params) String() string {
	s := fmt.Sprintf("rate=%s delay=%v", rateSpec(p.RateBps), p.Delay)
	if p.Jitter > 0 {
		s += fmt.Sprintf(" jitter=%v/%s", p.Jitter, p.jitterDist())
	}
	if p.Loss > 0 {
		s += fmt.Sprintf(" loss=%g", p.Loss)
	}
	if p.GE != nil {
		s += fmt.Sprintf(" ge=%g/%g/%g/%g", p.GE.P, p.GE.R, p.GE.K, p.GE.H)
	}
	if p.BER > 0 {
		s += fmt.Sprintf(" ber=%g", p.BER)
	}
	if p.Duplicate > 0 {
		s += fmt.Sprintf(" dup=%g", p.Duplicate)
	}
	pk, by := p.limits()
	if pk > 0 {
		s += fmt.Sprintf(" limit=%dp", pk)
	}
	if by > 0 {
		s += fmt.Sprintf(" limit=%dB", by)
	}
	s += " qdisc=" + string(p.qdisc())
	if p.ECN {
		s += " ecn"
	}
	if p.MTU > 0 {
		s += fmt.Sprintf(" mtu=%d", p.MTU)
	}
	if p.HalfDuplex {
		s += " duplex=half"
	}
	switch {
	case p.Hold == HoldUntilDrained:
		s += " hold=drain"
	case p.Hold > 0:
		s += fmt.Sprintf(" hold=%v", p.Hold)
	}
	if p.Turnaround > 0 {
		s += fmt.Sprintf(" turnaround=%v", p.Turnaround)
	}
	return s
}

func (p Params) jitterDist() Dist {
	if p.JitterDist == "" {
		return Uniform
	}
	return p.JitterDist
}

// dueHeap orders packets by due time, then arrival.
type dueHeap []*Packet

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(i, j int) bool {
	if h[i].Due != h[j].Due {
		return h[i].Due < h[j].Due
	}
	return h[i].Seq < h[j].Seq
}
func (h dueHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)   { *h = append(*h, x.(*Packet)) }
func (h *dueHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return p
}
