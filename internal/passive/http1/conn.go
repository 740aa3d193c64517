package http1

import (
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// Bounds per connection.
const (
	// MaxExchanges is how many exchanges a connection reports in detail.
	MaxExchanges = 1000
	// maxOutstanding bounds requests waiting for their response (pipelining).
	maxOutstanding = 256
	// maxPending bounds the out-of-order payload held per direction while
	// waiting for a retransmission to fill a hole.
	maxPending     = 256 << 10
	maxPendingSegs = 512
	// maxHeld and maxHeldSegs bound the server bytes held while no request
	// is outstanding. They only need to cover a capture's reordering of
	// the two directions (a segment or two); a server that sends more
	// first is not HTTP, and holding (copying) a bulk sender's segments
	// cost a tenth of the analyser's time on downloads.
	maxHeld     = 64 << 10
	maxHeldSegs = 8
)

// Directions: Client is the sender of the SYN (side A of the analyser).
const (
	Client = 0
	Server = 1
)

type segment struct {
	seq  uint32
	n    int
	data []byte
	t    int64
}

// stream is one direction: reassembly in front of the parser.
type stream struct {
	p         parser
	init      bool
	next      uint32 // next expected sequence number
	pending   []segment
	pendBytes int
	started   bool // payload seen
	fin       bool
	finSeq    uint32
	ended     bool
}

// exchange is a request being answered.
type exchange struct {
	ex      model.HTTPExchange
	start   int64
	first   int64 // response's first byte (0: none yet)
	reqDone bool
	head    bool // HEAD: the response has no body
	connect bool
	keep    bool // request allows persistence
	minor   int
}

// finInfo is a side's first FIN.
type finInfo struct {
	seen, hasAck bool
	t            int64
	ack          uint32 // the FIN's own ACK number
	acked        uint32 // the ACK number that acknowledges the FIN
}

// Conn follows HTTP/1.x on one TCP connection.
type Conn struct {
	dir        [2]stream
	base       int64 // capture time origin of the analysis (for RequestS)
	out        []exchange
	done       []model.HTTPExchange
	requests   int
	responses  int
	pipelined  int
	version    string
	keepAlive  bool
	lastEnd    int64
	closeBy    string
	closeHow   string
	closeT     int64
	fin        [2]finInfo
	hs         uint8 // handshake packets seen: 1 SYN, 2 SYN-ACK, 4 the client's first ACK
	synT       int64
	synAckT    int64
	ackT       int64
	held       []segment
	heldBytes  int
	incomplete string
	dead       bool
	seen       bool // a request's head was parsed: this is HTTP/1.x
}

// NewConn returns a Conn; base is the capture time (ns) that RequestS
// counts from.
func NewConn(base int64) *Conn {
	c := &Conn{base: base}
	c.dir[Client].p = parser{request: true, ev: clientEvents{c}}
	c.dir[Server].p = parser{request: false, ev: serverEvents{c}}
	return c
}

func (c *Conn) giveUp(reason string) {
	if !c.dead {
		c.dead = true
		c.incomplete = reason
		c.held = nil
		for i := range c.dir {
			c.dir[i].pending = nil
			c.dir[i].p.st = sDead
			c.dir[i].p.buf = nil
		}
	}
}

// Seg is one TCP segment as captured.
type Seg struct {
	Seq, Ack           uint32
	SYN, FIN, RST, ACK bool
	Payload            []byte // as captured (the snap length may cut it)
	Len                int    // payload length on the wire
}

// Segment feeds one TCP segment of direction dir (Client or Server)
// captured at t (ns). Retransmissions and reordering are handled here;
// segments never seen leave a hole that stops the analysis.
func (c *Conn) Segment(dir int, t int64, s *Seg) {
	c.handshake(dir, t, s)
	c.closing(dir, t, s)
	if c.dead {
		return
	}
	d := &c.dir[dir]
	seq := s.Seq
	if s.SYN {
		if !d.init { // a retransmitted SYN changes nothing
			d.next, d.init = seq+1, true
		}
		seq++
	}
	if s.FIN && !d.fin {
		d.fin, d.finSeq = true, seq+uint32(s.Len)
	}
	if s.Len > 0 {
		switch {
		case d.init && !after(seq+uint32(s.Len), d.next):
			// All seen before: a retransmission.
		case dir == Server && len(c.out) == 0:
			// No request waiting: hold the server's bytes until one comes.
			// Captures whose two directions are written by different
			// threads put a response before its request now and then
			// (by less than a millisecond); a server that speaks first
			// is not HTTP and is caught when the client's bytes arrive.
			if c.heldBytes+s.Len > maxHeld || len(c.held) >= maxHeldSegs {
				c.giveUp("not-http")
				return
			}
			c.held = append(c.held, segment{seq: seq, n: s.Len, data: slices.Clone(s.Payload), t: t})
			c.heldBytes += s.Len
			return
		default:
			c.data(dir, t, seq, s.Payload, s.Len)
			if c.dead {
				return
			}
		}
	}
	if s.RST {
		// An abort ends both directions where they stand.
		for i := range c.dir {
			if !c.dir[i].ended {
				c.dir[i].ended = true
				c.dir[i].p.eof(t)
			}
		}
		return
	}
	c.checkEnd(d, t)
	if dir == Client && len(c.held) > 0 && len(c.out) > 0 {
		held := c.held
		c.held, c.heldBytes = nil, 0
		for _, h := range held {
			c.data(Server, h.t, h.seq, h.data, h.n)
			if c.dead {
				return
			}
		}
		c.checkEnd(&c.dir[Server], t)
	}
}

// data passes payload to its direction's reassembly.
func (c *Conn) data(dir int, t int64, seq uint32, payload []byte, n int) {
	d := &c.dir[dir]
	if !d.started && (!d.init || seq == d.next) {
		// The first payload of each direction decides whether this is
		// HTTP/1.x at all. (A capture that starts mid-stream is not
		// followed.)
		d.started = true
		if !d.p.looksLikeStart(payload) {
			c.giveUp("not-http")
			return
		}
	}
	if !d.init {
		d.next, d.init = seq, true
	}
	c.deliver(d, t, seq, payload, n)
}

// checkEnd delivers the end of a direction once every byte before its FIN
// was parsed.
func (c *Conn) checkEnd(d *stream, t int64) {
	if d.fin && !d.ended && d.init && d.next == d.finSeq && len(d.pending) == 0 {
		d.ended = true
		d.p.eof(t)
	}
}

// handshake measures the observer's round trips to each side from the
// three-way handshake, to order the two FINs of a close.
func (c *Conn) handshake(dir int, t int64, s *Seg) {
	switch {
	case dir == Client && s.SYN && !s.ACK && c.hs&1 == 0:
		c.synT, c.hs = t, c.hs|1
	case dir == Server && s.SYN && s.ACK && c.hs&2 == 0:
		c.synAckT, c.hs = t, c.hs|2
	case dir == Client && !s.SYN && s.ACK && c.hs&4 == 0:
		// The first ACK may be written to the capture before the SYN-ACK
		// (see Segment): the round trips are computed when needed.
		c.ackT, c.hs = t, c.hs|4
	}
}

// sideRTT returns the observer → side → observer round trips from the
// handshake; ok is false when it was not captured.
func (c *Conn) sideRTT() (rtt [2]int64, ok bool) {
	if c.hs != 7 || c.synAckT < c.synT || c.ackT < c.synAckT {
		return rtt, false
	}
	return [2]int64{c.ackT - c.synAckT, c.synAckT - c.synT}, true
}

// closing decides who closed: the side whose FIN the other's FIN
// acknowledges, or, for two independent FINs, the one sent first (its
// capture time less half the observer's round trip to its sender). The
// first RST names the closer when no FIN came before it.
func (c *Conn) closing(dir int, t int64, s *Seg) {
	name := [2]string{"client", "server"}
	switch {
	case s.FIN && !c.fin[dir].seen:
		f := &c.fin[dir]
		f.seen, f.t, f.hasAck, f.ack = true, t, s.ACK, s.Ack
		f.acked = s.Seq + uint32(s.Len) + 1
		if s.SYN {
			f.acked++
		}
		o := &c.fin[dir^1]
		switch {
		case !o.seen:
			if c.closeBy == "" {
				c.closeBy, c.closeHow, c.closeT = name[dir], "fin", t
			}
		case c.closeHow != "fin":
		case o.hasAck && !after(f.acked, o.ack):
			// The other side's FIN, captured first, acknowledged this
			// one: this side closed first.
			c.closeBy, c.closeT = name[dir], t
		case f.hasAck && !after(o.acked, f.ack):
			// This FIN acknowledges the other's: it answers the close.
		default:
			// Independent FINs: the one that left its sender first.
			if rtt, ok := c.sideRTT(); ok && t-rtt[dir]/2 < o.t-rtt[dir^1]/2 {
				c.closeBy, c.closeT = name[dir], t
			}
		}
	case s.RST && c.closeBy == "":
		c.closeBy, c.closeHow, c.closeT = name[dir], "rst", t
	}
}

func (c *Conn) deliver(d *stream, t int64, seq uint32, payload []byte, n int) {
	end := seq + uint32(n)
	if !after(end, d.next) {
		return // all seen before: a retransmission
	}
	if after(seq, d.next) {
		// A hole before this segment: hold it until the hole is filled.
		if d.pendBytes+n > maxPending || len(d.pending) >= maxPendingSegs {
			c.giveUp("gap")
			return
		}
		d.pending = append(d.pending, segment{seq: seq, n: n, data: slices.Clone(payload), t: t})
		d.pendBytes += n
		return
	}
	c.feed(d, t, seq, payload, n)
	for !c.dead && len(d.pending) > 0 {
		i := slices.IndexFunc(d.pending, func(s segment) bool { return !after(s.seq, d.next) })
		if i < 0 {
			return
		}
		s := d.pending[i]
		d.pending = slices.Delete(d.pending, i, i+1)
		d.pendBytes -= s.n
		if after(s.seq+uint32(s.n), d.next) {
			// Feed at the time the hole was filled: that is when the
			// receiving application could read the bytes.
			c.feed(d, t, s.seq, s.data, s.n)
		}
	}
}

// feed passes the part of a segment beyond d.next to the parser.
func (c *Conn) feed(d *stream, t int64, seq uint32, payload []byte, n int) {
	off := int(d.next - seq)
	data := payload[min(off, len(payload)):]
	d.p.feed(t, data, n-off)
	d.next = seq + uint32(n)
}

func after(x, y uint32) bool { return int32(x-y) > 0 }

// clientEvents and serverEvents receive the two parsers' messages.
type clientEvents struct{ c *Conn }
type serverEvents struct{ c *Conn }

func (e clientEvents) fail(r string) { e.c.giveUp(r) }
func (e serverEvents) fail(r string) { e.c.giveUp(r) }

func (e clientEvents) start(t int64) {
	c := e.c
	if len(c.out) >= maxOutstanding {
		c.giveUp("limit")
		return
	}
	c.requests++
	c.out = append(c.out, exchange{start: t, ex: model.HTTPExchange{RequestS: float64(t-c.base) / 1e9}})
}

func (e clientEvents) head(m *message) (bodyKind, int64) {
	c := e.c
	x := &c.out[len(c.out)-1]
	x.ex.Method, x.ex.Path, x.ex.Host, x.ex.Version = m.method, m.target, m.host, m.version
	x.head, x.connect, x.minor = m.method == "HEAD", m.method == "CONNECT", m.minor
	x.keep = !m.close && (m.minor >= 1 || m.keepAlive)
	c.seen = true
	if c.version == "" {
		c.version = m.version
	}
	switch {
	case m.chunked:
		return bodyChunked, 0
	case m.otherTE:
		return bodyTunnel, 0 // a request body we cannot delimit
	case m.hasLength:
		return bodyLength, m.length
	}
	return bodyNone, 0
}

func (e clientEvents) end(t int64, msgBytes, _ uint64) {
	c := e.c
	// The request just finished is the newest one that is not done.
	for i := len(c.out) - 1; i >= 0; i-- {
		if !c.out[i].reqDone {
			c.out[i].reqDone = true
			c.out[i].ex.ReqBytes = msgBytes
			return
		}
	}
}

func (e serverEvents) start(t int64) {
	c := e.c
	if len(c.out) == 0 {
		c.giveUp("malformed") // a response without a request
		return
	}
	x := &c.out[0]
	if x.first == 0 {
		x.first = t
		x.ex.TTFBMs = float64(t-x.start) / 1e6
	}
}

func (e serverEvents) head(m *message) (bodyKind, int64) {
	c := e.c
	x := &c.out[0]
	x.ex.Status = m.status
	switch {
	case m.status == 101:
		return bodyTunnel, 0
	case m.status < 200:
		x.ex.Status = 0
		x.ex.RespBytes += uint64(m.headerBytes) // interim: counted, not final
		return bodyNone, -1
	case x.connect && m.status < 300:
		return bodyTunnel, 0
	}
	x.keep = x.keep && !m.close && (m.minor >= 1 || m.keepAlive)
	switch {
	case x.head || m.status == 204 || m.status == 304:
		return bodyNone, 0
	case m.chunked:
		return bodyChunked, 0
	case m.otherTE:
		x.keep = false
		return bodyClose, 0
	case m.hasLength:
		return bodyLength, m.length
	}
	x.keep = false // delimited by the close
	return bodyClose, 0
}

func (e serverEvents) end(t int64, msgBytes, bodyBytes uint64) {
	c := e.c
	if len(c.out) == 0 {
		return
	}
	x := &c.out[0]
	if x.ex.Status == 0 {
		return // end of a 1xx interim response: the final one follows
	}
	x.ex.RespBytes += msgBytes
	x.ex.RespBodyBytes = bodyBytes
	x.ex.CompleteMs = float64(t-x.start) / 1e6
	x.ex.KeepAlive = x.keep
	c.keepAlive = x.keep
	c.responses++
	c.lastEnd = t
	if len(c.done) < MaxExchanges {
		c.done = append(c.done, x.ex)
	}
	c.out = slices.Delete(c.out, 0, 1)
	if len(c.out) > 0 && c.out[0].start < t {
		// The next request left before this response was complete. (By
		// time, not by capture order: see Segment.)
		c.pipelined++
	}
}

// NotHTTP reports that the connection turned out not to carry HTTP/1.x:
// the analysis stopped before a request was parsed.
func (c *Conn) NotHTTP() bool { return c.dead && !c.seen }

// Result returns the connection's HTTP behaviour, nil when no request was
// seen (not HTTP/1.x, or its start was not captured).
func (c *Conn) Result() *model.HTTPConn {
	if !c.seen {
		return nil
	}
	r := &model.HTTPConn{Version: c.version, Requests: c.requests, Responses: c.responses, Pipelined: c.pipelined,
		KeepAlive: c.keepAlive, CloseBy: c.closeBy, CloseHow: c.closeHow, Incomplete: c.incomplete}
	r.Exchanges = append(r.Exchanges, c.done...)
	for _, x := range c.out { // unanswered or unfinished
		if len(r.Exchanges) < MaxExchanges {
			r.Exchanges = append(r.Exchanges, x.ex)
		}
	}
	if r.Incomplete == "" {
		for i := range c.dir {
			if len(c.dir[i].pending) > 0 {
				r.Incomplete = "gap"
			}
		}
	}
	if c.closeBy != "" && c.lastEnd > 0 && c.closeT > c.lastEnd {
		r.IdleBeforeCloseS = float64(c.closeT-c.lastEnd) / 1e9
	}
	return r
}
