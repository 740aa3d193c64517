package passive

import (
	"bytes"

	"github.com/sonde-project/sonde/internal/passive/spinbit"
)

// quicCands holds UDP flows whose first datagram had a long header (RFC
// 8999's invariants: spinbit.Invariant) of a version sonde does not know,
// on a port that is not a --quic-port, until the peer confirms them: its
// answer is a long header of the same version whose DCID is the first
// sender's SCID, or a short header starting with that SCID. Random UDP
// passes the invariants of one datagram about once in 300; it does not
// pass a matching answer. The table is bounded (maxQUICCands): a flood of
// candidates forgets the older ones, which costs at most a missed flow.
type quicCands struct {
	m map[flowKey]quicCand
}

type quicCand struct {
	version uint32
	fromLo  bool // the first sender is the key's lower address
	scid    [20]byte
	scidLen uint8
	t       int64 // capture time of the first datagram
	port    uint16
	// The first sender's datagrams before the answer, counted into the
	// flow when it is confirmed.
	packets, short, bytes uint64
}

const (
	maxQUICCands = 4096
	// quicCandLinger is how long a candidate waits for its answer.
	quicCandLinger = int64(10e9)
	// minEchoCID is the shortest SCID whose echo in a short header
	// confirms a candidate (a long answer also repeats the version).
	minEchoCID = 4
)

// offer records a datagram from the side fromLo of flow k that failed
// every other test, or confirms the flow it answers. It returns whether
// the flow is confirmed, with the candidate.
func (q *quicCands) offer(k *flowKey, fromLo bool, b []byte, t int64, size int, port uint16) (quicCand, bool) {
	c, ok := q.m[*k]
	if ok && t-c.t > quicCandLinger {
		delete(q.m, *k)
		ok = false
	}
	if ok && c.fromLo != fromLo && c.answeredBy(b) {
		delete(q.m, *k)
		return c, true
	}
	if ok {
		// The same side again, or no answer: keep the first, and
		// count the first sender's datagrams.
		if c.fromLo == fromLo {
			c.packets++
			c.bytes += uint64(size)
			if b[0]&0x80 == 0 {
				c.short++
			}
			q.m[*k] = c
		}
		return c, false
	}
	v, _, scid, inv := spinbit.Invariant(b)
	if !inv || v == 0 {
		return c, false
	}
	if q.m == nil {
		q.m = make(map[flowKey]quicCand)
	}
	if len(q.m) >= maxQUICCands {
		for key, old := range q.m {
			if t-old.t > quicCandLinger || len(q.m) >= maxQUICCands {
				delete(q.m, key)
			}
		}
	}
	c = quicCand{version: v, fromLo: fromLo, scidLen: uint8(len(scid)), t: t, port: port, packets: 1, bytes: uint64(size)}
	copy(c.scid[:], scid)
	q.m[*k] = c
	return c, false
}

// answeredBy reports whether datagram b, from the other side, answers the
// candidate's first datagram.
func (c *quicCand) answeredBy(b []byte) bool {
	scid := c.scid[:c.scidLen]
	if len(b) > 0 && b[0]&0x80 == 0 {
		return len(scid) >= minEchoCID && len(b) > len(scid) && bytes.Equal(b[1:1+len(scid)], scid)
	}
	v, dcid, _, ok := spinbit.Invariant(b)
	return ok && v == c.version && bytes.Equal(dcid, scid)
}
