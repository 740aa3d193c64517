package emulator

import (
	"math/rand/v2"
	"time"
)

// PIE defaults (RFC 8033 §5 and metrics.md §9).
const (
	PIETarget   = 15 * time.Millisecond
	PIETUpdate  = 15 * time.Millisecond
	PIEMaxBurst = 150 * time.Millisecond
	pieAlpha    = 0.125 // per second
	pieBeta     = 1.25  // per second
	pieMarkECN  = 0.1   // mark instead of drop while p ≤ 10%
	pieMeanPkt  = 1500
)

// pie is RFC 8033's Proportional Integral controller Enhanced. Queue delay
// is measured with timestamps (the sojourn of the last dequeued packet, as
// Linux does without its rate estimator). The optional derandomisation is
// not implemented: drops are independent with probability p.
type pie struct {
	q       fifo
	limit   limit
	target  time.Duration
	tupdate time.Duration
	ecn     bool
	rng     *rand.Rand

	prob      float64
	qdelay    time.Duration // current estimate
	qdelayOld time.Duration
	burst     time.Duration // remaining burst allowance
	next      time.Duration // next probability update; never while dormant
}

func newPIE(p *Params, seed uint64) *pie {
	q := &pie{rng: newStream(seed, streamAQM), burst: PIEMaxBurst, next: never}
	q.setParams(p)
	return q
}

func (q *pie) setParams(p *Params) {
	q.limit = newLimit(p)
	q.target, q.tupdate, q.ecn = p.Target, p.Interval, p.ECN
	if q.target == 0 {
		q.target = PIETarget
	}
	if q.tupdate == 0 {
		q.tupdate = PIETUpdate
	}
}

func (q *pie) enqueue(p *Packet, now time.Duration, _ dropFunc) bool {
	if q.limit.full(q.q.len(), q.q.bytes(), len(p.Data)) {
		p.Fate = DropQueue
		return false
	}
	if q.next == never {
		// Wake the controller, on the grid it would have kept.
		q.next = now + q.tupdate
	}
	if q.dropEarly() {
		if !(q.ecn && q.prob <= pieMarkECN && MarkCE(p.Data)) {
			p.Fate = DropAQM
			return false
		}
		p.Flags |= FlagMarked
	}
	q.q.push(p)
	return true
}

// dropEarly is RFC 8033 §5.1's drop_early.
func (q *pie) dropEarly() bool {
	if q.burst > 0 {
		return false
	}
	if q.qdelayOld < q.target/2 && q.prob < 0.2 {
		return false
	}
	if q.q.bytes() <= 2*pieMeanPkt {
		return false
	}
	return q.rng.Float64() < q.prob
}

func (q *pie) dequeue(now time.Duration, _ dropFunc) *Packet {
	p := q.q.pop()
	if p == nil {
		q.qdelay = 0
		return nil
	}
	q.qdelay = now - p.Arrival
	if q.q.len() == 0 {
		q.qdelay = 0
	}
	return p
}

func (q *pie) len() int   { return q.q.len() }
func (q *pie) bytes() int { return q.q.bytes() }

func (q *pie) nextTimer() time.Duration { return q.next }

// timer is RFC 8033 §5.2's calculate_drop_prob with the auto-scaling of
// α and β (§4.2), the +2% safeguard above 250 ms and the decay when idle.
func (q *pie) timer(now time.Duration) {
	qd, old := q.qdelay.Seconds(), q.qdelayOld.Seconds()
	tg := q.target.Seconds()
	p := pieAlpha*(qd-tg) + pieBeta*(qd-old)
	switch {
	case q.prob < 0.000001:
		p /= 2048
	case q.prob < 0.00001:
		p /= 512
	case q.prob < 0.0001:
		p /= 128
	case q.prob < 0.001:
		p /= 32
	case q.prob < 0.01:
		p /= 8
	case q.prob < 0.1:
		p /= 2
	}
	if q.prob >= 0.1 && p > 0.02 {
		p = 0.02
	}
	if q.qdelay > 250*time.Millisecond {
		p += 0.02
	}
	q.prob += p
	if q.qdelay == 0 && q.qdelayOld == 0 {
		q.prob *= 0.98
	}
	q.prob = min(max(q.prob, 0), 1)
	q.qdelayOld = q.qdelay
	q.burst = max(q.burst-q.tupdate, 0)
	if q.prob == 0 && q.qdelay < q.target/2 && q.qdelayOld < q.target/2 {
		q.burst = PIEMaxBurst
	}
	q.next = now + q.tupdate
	if q.prob < 1e-9 && q.qdelay == 0 && q.q.len() == 0 {
		// Nothing left to decay: sleep until the next arrival.
		q.prob, q.next = 0, never
	}
}
