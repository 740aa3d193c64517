package httpload

import (
	"net"
	"time"

	"github.com/sonde-project/sonde/internal/stream"
)

// Bounds of the unsent data a load flow keeps queued in its socket.
const (
	// lowatTarget is the sending time the queue holds at the flow's rate
	// (draft-ietf-ippm-responsiveness-09 §6.1: about 5 ms).
	lowatTarget = 5 * time.Millisecond
	// lowatStart is used until a rate is known.
	lowatStart = 128 << 10
	// lowatMin keeps a slow flow's writes from waking per packet;
	// lowatMax bounds a fast flow's queue.
	lowatMin = 16 << 10
	lowatMax = 4 << 20
	// lowatEvery is how often the rate is measured again.
	lowatEvery = 100 * time.Millisecond
)

// lowat keeps one flow's TCP_NOTSENT_LOWAT at lowatTarget of its rate, the
// rate being what the flow wrote over the last lowatEvery (on a socket that
// accepts no more than that, what it wrote is what the path took).
type lowat struct {
	c     net.Conn
	since time.Time
	bytes int
	set   int
}

func newLowat(c net.Conn) *lowat {
	l := &lowat{c: c, since: time.Now(), set: lowatStart}
	stream.LimitUnsent(c, l.set)
	return l
}

func (l *lowat) wrote(n int) {
	if l.c == nil {
		return
	}
	l.bytes += n
	now := time.Now()
	dt := now.Sub(l.since)
	if dt < lowatEvery {
		return
	}
	want := UnsentFor(float64(l.bytes) / dt.Seconds())
	l.since, l.bytes = now, 0
	// Only a change of more than a quarter is worth a system call.
	if want > l.set*5/4 || want < l.set*3/4 {
		l.set = want
		stream.LimitUnsent(l.c, want)
	}
}

// UnsentStart is the TCP_NOTSENT_LOWAT of a load flow before its rate is
// known.
const UnsentStart = lowatStart

// UnsentFor is the TCP_NOTSENT_LOWAT of a load flow sending rate bytes a
// second: lowatTarget of it, within lowatMin and lowatMax. The client's
// uploads (internal/rpm) keep theirs the same way.
func UnsentFor(rate float64) int {
	return min(max(int(rate*lowatTarget.Seconds()), lowatMin), lowatMax)
}

// value is the TCP_NOTSENT_LOWAT last set (for tests).
func (l *lowat) value() int { return l.set }
