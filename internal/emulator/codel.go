package emulator

import (
	"math"
	"time"
)

// CoDel defaults (RFC 8289).
const (
	CoDelTarget   = 5 * time.Millisecond
	CoDelInterval = 100 * time.Millisecond
)

// codelConfig is what one CoDel instance needs to know.
type codelConfig struct {
	target, interval time.Duration
	ecn              bool
	maxPacket        int // largest packet seen: below one packet of backlog, never drop
}

func newCodelConfig(p *Params) codelConfig {
	c := codelConfig{target: p.Target, interval: p.Interval, ecn: p.ECN, maxPacket: 1514}
	if c.target == 0 {
		c.target = CoDelTarget
	}
	if c.interval == 0 {
		c.interval = CoDelInterval
	}
	return c
}

// codel is the state of the CoDel control law (RFC 8289 §5), shared by the
// single-queue discipline and each FQ-CoDel flow.
type codel struct {
	firstAbove    time.Duration
	firstAboveSet bool
	dropNext      time.Duration
	count         int
	lastCount     int
	dropping      bool
}

func controlLaw(t, interval time.Duration, count int) time.Duration {
	return t + time.Duration(float64(interval)/math.Sqrt(float64(count)))
}

// doDequeue pops the head and says whether its sojourn has been above
// target for at least an interval.
func (c *codel) doDequeue(q *fifo, now time.Duration, cf *codelConfig) (*Packet, bool) {
	p := q.pop()
	if p == nil {
		c.firstAboveSet = false
		return nil, false
	}
	if now-p.Arrival < cf.target || q.bytes() <= cf.maxPacket {
		c.firstAboveSet = false
		return p, false
	}
	if !c.firstAboveSet {
		c.firstAbove, c.firstAboveSet = now+cf.interval, true
		return p, false
	}
	return p, now >= c.firstAbove
}

// signal marks p (returning true) when ECN is on and p is ECN-capable, or
// drops it.
func signal(p *Packet, cf *codelConfig, drop dropFunc) bool {
	if cf.ecn && MarkCE(p.Data) {
		p.Flags |= FlagMarked
		return true
	}
	drop(p, DropAQM)
	return false
}

// dequeue is RFC 8289's dequeue: while in the dropping state, drop (or
// mark) at intervals shrinking as interval/√count.
func (c *codel) dequeue(q *fifo, now time.Duration, cf *codelConfig, drop dropFunc) *Packet {
	p, ok := c.doDequeue(q, now, cf)
	if p == nil {
		c.dropping = false
		return nil
	}
	if c.dropping {
		if !ok {
			c.dropping = false
		}
		for c.dropping && now >= c.dropNext {
			c.count++
			if signal(p, cf, drop) {
				c.dropNext = controlLaw(c.dropNext, cf.interval, c.count)
				return p
			}
			p, ok = c.doDequeue(q, now, cf)
			if !ok {
				c.dropping = false
			} else {
				c.dropNext = controlLaw(c.dropNext, cf.interval, c.count)
			}
		}
		return p
	}
	if ok {
		if !signal(p, cf, drop) {
			p, _ = c.doDequeue(q, now, cf)
		}
		c.dropping = true
		delta := c.count - c.lastCount
		c.count = 1
		if delta > 1 && now-c.dropNext < 16*cf.interval {
			c.count = delta
		}
		c.dropNext = controlLaw(now, cf.interval, c.count)
		c.lastCount = c.count
	}
	return p
}

// coDelQueue is a single FIFO managed by CoDel, tail-dropping at its limit.
type coDelQueue struct {
	q     fifo
	limit limit
	cf    codelConfig
	st    codel
}

func newCoDelQueue(p *Params) *coDelQueue {
	return &coDelQueue{limit: newLimit(p), cf: newCodelConfig(p)}
}

func (c *coDelQueue) enqueue(p *Packet, _ time.Duration, _ dropFunc) bool {
	if c.limit.full(c.q.len(), c.q.bytes(), len(p.Data)) {
		p.Fate = DropQueue
		return false
	}
	c.cf.maxPacket = max(c.cf.maxPacket, len(p.Data))
	c.q.push(p)
	return true
}

func (c *coDelQueue) dequeue(now time.Duration, drop dropFunc) *Packet {
	return c.st.dequeue(&c.q, now, &c.cf, drop)
}

func (c *coDelQueue) len() int   { return c.q.len() }
func (c *coDelQueue) bytes() int { return c.q.bytes() }
func (c *coDelQueue) setParams(p *Params) {
	c.limit = newLimit(p)
	m := c.cf.maxPacket
	c.cf = newCodelConfig(p)
	c.cf.maxPacket = m
}
func (c *coDelQueue) nextTimer() time.Duration { return never }
func (c *coDelQueue) timer(time.Duration)      {}
