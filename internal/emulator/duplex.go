package emulator

import (
	"errors"
	"time"
)

// HalfDuplex is a link whose two directions share one medium, as a
// half-duplex radio or a shared bus does (RFC 8337 §8.2.4): a packet is
// serialised, at its own direction's rate, only while no packet of either
// direction is on the medium. Everything else (loss, queue, AQM,
// propagation delay, jitter) stays per direction.
//
// Arbitration, each time the medium is free and a direction has backlog:
// the direction whose head has waited longest for the medium takes it
// (its wait starts when its queue went from empty to backlogged, or when
// its own last packet left the medium), ties to the direction that did not
// send last, then Up. Channel holding: the direction that sent the packet
// just finished keeps the medium for its next packet while the other
// direction's head has waited less than the sender's Hold
// (HoldUntilDrained: until the sender's queue is empty, the RFC's
// historical links that revert a self-clocked transport to stop-and-wait).
// Hold 0 alternates packet by packet under load. A packet that starts
// within the hold may end after it: the other direction waits at most
// Hold plus one packet and two turnarounds (to the other direction and
// back). Turnaround: a direction
// that takes the medium from the other starts its packet no sooner than
// Turnaround after the other's last one ended; the medium is its own
// from the decision on.
//
// Each packet's MediumWait (and the Counters) records how long its head
// waited, ready to go, while the other direction had the medium: the
// ground truth of the interference.
//
// Like Link, it is a discrete-event model: every grant happens at its
// exact model time whenever either side is advanced. It is not safe for
// concurrent use: a driver with a thread per direction serialises the
// calls (package forward holds one mutex per half-duplex link).
type HalfDuplex struct {
	dirs [2]Side
	m    medium
	now  time.Duration
}

// medium is the state the two directions share.
type medium struct {
	busyUntil time.Duration // free from
	last      *Link         // sent the last packet (nil: none yet)
}

// Side is one direction of a HalfDuplex, with Link's methods.
type Side struct {
	h *HalfDuplex
	l *Link
}

// NewHalfDuplex builds both directions of a half-duplex link; both
// configurations must have Params.HalfDuplex.
func NewHalfDuplex(up, down Config) (*HalfDuplex, error) {
	if !up.Params.HalfDuplex || !down.Params.HalfDuplex {
		return nil, errors.New("duplex=half must be set on both directions of a link")
	}
	h := &HalfDuplex{}
	for i, c := range []Config{up, down} {
		l, err := newLink(c)
		if err != nil {
			return nil, err
		}
		l.m = &h.m
		h.dirs[i] = Side{h: h, l: l}
	}
	return h, nil
}

// Dir returns direction Up or Down.
func (h *HalfDuplex) Dir(dir uint8) *Side { return &h.dirs[dir&1] }

// wantsAt is since when l's head has wanted the medium (never: no backlog).
func (l *Link) wantsAt() time.Duration {
	if l.q.len() == 0 {
		return never
	}
	return max(l.waitFrom, l.busyUntil)
}

// nextGrant is the time the medium next starts a packet and the direction
// that sends it (never, nil: no backlog): the direction chosen when the
// medium is free, after its turnaround if it takes the medium from the
// other.
func (h *HalfDuplex) nextGrant() (time.Duration, *Link) {
	t, who := h.choose()
	if who != nil && h.m.last != nil && h.m.last != who {
		t = max(t, h.m.busyUntil+who.p.Turnaround)
	}
	return t, who
}

// choose is the time the medium is free and a direction wants it, and the
// direction that takes it then.
func (h *HalfDuplex) choose() (time.Duration, *Link) {
	a, b := h.dirs[0].l, h.dirs[1].l
	wa, wb := a.wantsAt(), b.wantsAt()
	first := min(wa, wb)
	if first == never {
		return never, nil
	}
	t := max(h.m.busyUntil, first)
	switch {
	case wb > t:
		return t, a
	case wa > t:
		return t, b
	}
	// Both wait: the sender of the packet just finished keeps the medium
	// while the other has waited less than its hold.
	if s := h.m.last; s != nil && h.m.busyUntil == t {
		wo := wb
		if s == b {
			wo = wa
		}
		if t-wo < s.p.Hold {
			return t, s
		}
	}
	switch {
	case wa < wb:
		return t, a
	case wb < wa:
		return t, b
	case h.m.last == a:
		return t, b
	}
	return t, a
}

// advance runs every event of both directions up to and including now, in
// time order: each link's schedule steps and queue timers, then the
// medium's grants.
func (h *HalfDuplex) advance(now time.Duration) {
	a, b := h.dirs[0].l, h.dirs[1].l
	for {
		ta, tb := a.nextInternal(), b.nextInternal()
		tg, who := h.nextGrant()
		t := min(ta, tb, tg)
		if t > now {
			break
		}
		switch t {
		case ta:
			a.advance(t)
		case tb:
			b.advance(t)
		default:
			who.serve(t)
		}
	}
	h.now = max(h.now, now)
}

// at is the time a call may use: a driver whose other thread advanced the
// model past now (its stamp was taken before it got the lock) is clamped
// to the model's time.
func (s *Side) at(now time.Duration) time.Duration { return max(now, s.h.now) }

// Enqueue is Link.Enqueue.
func (s *Side) Enqueue(p *Packet, now time.Duration) bool {
	now = s.at(now)
	s.h.advance(now)
	ok := s.l.Enqueue(p, now)
	s.h.advance(now) // an idle medium takes it at once
	return ok
}

// Release is Link.Release.
func (s *Side) Release(now time.Duration, out []*Packet) []*Packet {
	now = s.at(now)
	s.h.advance(now)
	return s.l.Release(now, out)
}

// Next is Link.Next, with the medium's next grant while this direction
// has backlog (a grant to either side changes when its head goes).
func (s *Side) Next() (time.Duration, bool) {
	t, _ := s.l.Next()
	if s.l.q.len() > 0 {
		g, _ := s.h.nextGrant()
		t = min(t, g)
	}
	return t, t != never
}

// Flush is Link.Flush.
func (s *Side) Flush() { s.l.Flush() }

// Counters is Link.Counters.
func (s *Side) Counters() Counters { return s.l.Counters() }

// Params is Link.Params.
func (s *Side) Params() Params { return s.l.Params() }
