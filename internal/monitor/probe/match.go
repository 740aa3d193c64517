package probe

import (
	"net/netip"

	"github.com/sonde-project/sonde/internal/model"
)

// Record states.
const (
	recEmpty   uint8 = iota
	recPending       // sent, waiting for its reply
	recLost          // timed out (a lost sample went out); a reply within the horizon is late
	recDone          // answered, or past hope
)

// record is what a stream remembers of one probe sent: a reply must echo
// all of seq, session and wire before it is taken for this probe's.
type record struct {
	seq     uint32
	state   uint8
	late    int64  // scheduler lateness, ns
	session uint64 // STAMP: the SSID; ICMP: the stream's token; TCP: the socket
	wire    uint64 // STAMP and ICMP: the send timestamp in the packet; TCP: a probe number
	sentNs  int64
	dst     netip.AddrPort
}

// pending is a stream's send records in a ring indexed by sequence number.
// Its size covers the late-reply horizon at the stream's rate, so a slot
// is reused only after its probe is beyond hope; a reply to a reused slot
// fails the seq, session and wire checks and matches nothing.
type pending struct {
	recs    []record
	mask    uint32
	oldest  uint32 // first seq not yet timed out or answered
	next    uint32 // seq of the next record
	timeout int64
	horizon int64
}

func newPending(ratePPS float64, timeout, horizon int64) pending {
	need := int(ratePPS*float64(horizon)/1e9) + 16
	n := 16
	for n < need {
		n <<= 1
	}
	return pending{recs: make([]record, n), mask: uint32(n - 1), timeout: timeout, horizon: horizon}
}

// add records probe r.seq, which must be p.next.
func (p *pending) add(r record) {
	r.state = recPending
	p.recs[r.seq&p.mask] = r
	p.next = r.seq + 1
	// The ring wraps before the oldest was resolved only when the
	// scheduler stalled for longer than the horizon: those are past hope.
	if p.next-p.oldest > uint32(len(p.recs)) {
		p.oldest = p.next - uint32(len(p.recs))
	}
}

// expire turns the records whose timeout has passed into lost samples
// (emitted through lost) and returns how many.
func (p *pending) expire(now int64, lost func(*record)) int {
	n := 0
	for p.oldest != p.next {
		r := &p.recs[p.oldest&p.mask]
		if r.seq == p.oldest && r.state == recPending {
			if now-r.sentNs < p.timeout {
				break
			}
			r.state = recLost
			lost(r)
			n++
		}
		p.oldest++
	}
	return n
}

// Match outcomes.
type outcome uint8

const (
	noMatch   outcome = iota // no send record echoes this reply: stray, forged or replayed
	inTime                   // answered within the timeout
	late                     // answered after the timeout, within the horizon
	duplicate                // a second reply to an answered probe
)

// match finds the record a reply belongs to: same sequence number, same
// session, same echoed wire stamp, from the address the probe went to,
// and not older than the horizon. It marks the record answered and fills
// sample when the outcome is inTime or late.
func (p *pending) match(seq uint32, session, wire uint64, from netip.AddrPort, recvNs int64, sample *model.ProbeSample) outcome {
	if p.next-seq-1 >= uint32(len(p.recs)) { // not among the last len(recs) probes sent (also seq ≥ next)
		return noMatch
	}
	r := &p.recs[seq&p.mask]
	if r.state == recEmpty || r.seq != seq || r.session != session || r.wire != wire || (from.IsValid() && r.dst != from) {
		return noMatch
	}
	rtt := recvNs - r.sentNs
	if rtt < 0 || rtt > p.horizon {
		return noMatch
	}
	if r.state == recDone {
		return duplicate
	}
	*sample = model.ProbeSample{Seq: seq, SentNs: r.sentNs, LatenessNs: r.late, RTTNs: rtt}
	out := inTime
	if r.state == recLost || rtt > p.timeout {
		sample.Lost, sample.Late = true, true
		out = late
	}
	r.state = recDone
	return out
}
