package passive

import (
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive/http1"
)

// httpFollow is a TCP connection's HTTP/1.x follower. Nothing is allocated
// until the connection's first payload could be HTTP; until then it keeps
// the handshake (sequence numbers and times), which it replays to the
// http1.Conn it then creates.
type httpFollow struct {
	conn *http1.Conn
	off  bool      // not HTTP: ignore the rest of the connection
	hs   uint8     // 1 SYN, 2 SYN-ACK, 4 the client's first ACK
	isn  [2]uint32 // client's and server's initial sequence numbers
	t    [3]int64  // SYN, SYN-ACK, first ACK
}

// follow passes a TCP segment to the connection's optional followers:
// the HTTP/1.x analysis (package http1) and the time-sequence record.
func (c *tcpConn) follow(a *Analyzer, dir uint8, t int64, s *tcpSegment, retrans bool) {
	if a.cfg.TimeSequence {
		if c.tseq == nil {
			c.tseq = &timeSeq{}
		}
		c.tseq.segment(a, c, dir, t, s, retrans)
	}
	h := &c.http
	if h.off {
		return
	}
	seg := http1.Seg{Seq: s.seq, Ack: s.ack, SYN: s.flags&flagSYN != 0, FIN: s.flags&flagFIN != 0,
		RST: s.flags&flagRST != 0, ACK: s.flags&flagACK != 0, Payload: s.payload, Len: s.payloadLen}
	if h.conn == nil {
		switch {
		case dir == 0 && seg.SYN && !seg.ACK && h.hs&1 == 0:
			h.hs, h.isn[0], h.t[0] = h.hs|1, seg.Seq, t
		case dir == 1 && seg.SYN && seg.ACK && h.hs&2 == 0:
			h.hs, h.isn[1], h.t[1] = h.hs|2, seg.Seq, t
		case dir == 0 && !seg.SYN && seg.ACK && h.hs&4 == 0 && seg.Len == 0:
			h.hs, h.t[2] = h.hs|4, t
		}
		if seg.Len == 0 {
			return
		}
		if dir == 0 && !http1.LooksLikeRequest(seg.Payload) || dir == 1 && !http1.MayStartResponse(seg.Payload) {
			// Bytes that cannot start a request or a response:
			// not HTTP/1.x (a server that speaks first, whose
			// segments http1 would hold until it gave up).
			h.off = true
			return
		}
		// Server bytes first may be a capture's reordering: let http1
		// decide when the client speaks.
		h.conn = http1.NewConn(a.first)
		if h.hs&1 != 0 {
			h.conn.Segment(http1.Client, h.t[0], &http1.Seg{Seq: h.isn[0], SYN: true})
		}
		if h.hs&2 != 0 {
			h.conn.Segment(http1.Server, h.t[1], &http1.Seg{Seq: h.isn[1], Ack: h.isn[0] + 1, SYN: true, ACK: true})
		}
		if h.hs&4 != 0 {
			h.conn.Segment(http1.Client, h.t[2], &http1.Seg{Seq: h.isn[0] + 1, Ack: h.isn[1] + 1, ACK: true})
		}
	}
	h.conn.Segment(int(dir), t, &seg)
	if h.conn.NotHTTP() {
		h.conn, h.off = nil, true
	}
}

// followResult adds the followers' results to a connection's record.
func (c *tcpConn) followResult(r *model.TCPConn) {
	if c.http.conn != nil {
		r.HTTP = c.http.conn.Result()
	}
	if c.tseq != nil {
		r.TimeSeq = c.tseq.result(c)
	}
}
