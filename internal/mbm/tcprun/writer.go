package tcprun

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

// writer produces a test's pattern on an upload stream: data frames of
// payload bytes, back to back (headway 0: the kernel's pacing sets the
// rate) or one every headway on absolute deadlines. It logs its own
// schedule, so that a pattern the host did not produce is seen.
type writer struct {
	payload int
	headway time.Duration

	// room, if set, says whether the congestion window lets n packets
	// leave now (cwnd − in flight ≥ n), read before each burst.
	room  func(n int64) bool
	burst int64
	// nWrites and nWhole are read live by the sampler.
	nWrites, nWhole, nMissed atomic.Int64

	once   sync.Once
	doneCh chan struct{}
	err    error
	// The schedule, read after done.
	writes, missed, blocked int64
	maxLate                 time.Duration
}

func (w *writer) init() { w.once.Do(func() { w.doneCh = make(chan struct{}) }) }

// done is closed when the writer stops.
func (w *writer) done() <-chan struct{} {
	w.init()
	return w.doneCh
}

// error is why the writer stopped (nil when its context ended).
func (w *writer) error() error { return w.err }

// run writes until ctx ends or a write fails.
func (w *writer) run(ctx context.Context, c net.Conn) {
	w.init()
	defer close(w.doneCh)
	frame := make([]byte, protocol.HeaderLen+w.payload)
	protocol.PutHeader(frame, protocol.FrameData, w.payload)
	if _, err := rand.Read(frame[protocol.HeaderLen:]); err != nil { // incompressible
		w.err = fmt.Errorf("random payload: %w", err)
		return
	}
	write := func() bool {
		if _, err := c.Write(frame); err != nil {
			if ctx.Err() == nil {
				w.err = err
			}
			return false
		}
		w.writes++
		w.nWrites.Add(1)
		return true
	}
	if w.headway <= 0 {
		for ctx.Err() == nil && write() {
		}
		return
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	next := time.Now()
	var prevEnd time.Time
	for ctx.Err() == nil {
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
		start := time.Now()
		// The host's lateness counts from when it could have written:
		// the deadline, or the end of a previous write that blocked
		// because the socket had not drained (that wait is the path's).
		due := next
		if prevEnd.After(due) {
			due = prevEnd
		}
		late := start.Sub(due)
		w.maxLate = max(w.maxLate, late)
		// Headways the host slept through entirely are skipped (and
		// counted missed), not made up with a merged burst; this write
		// is then for the latest slot, and missed too if more than half
		// a headway late for it.
		if skip := int64(late / w.headway); skip > 0 {
			w.missed += skip
			w.nMissed.Add(skip)
			next = next.Add(time.Duration(skip) * w.headway)
			late -= time.Duration(skip) * w.headway
		}
		if late > w.headway/2 {
			w.missed++
			w.nMissed.Add(1)
		}
		// Whether the burst can leave whole: TCP holds back what its
		// window does not allow, and the ACK clock then spreads it.
		whole := w.room == nil || w.room(w.burst)
		if !write() {
			return
		}
		if whole {
			w.nWhole.Add(1)
		}
		prevEnd = time.Now()
		if prevEnd.Sub(start) > w.headway {
			w.blocked++
		}
		next = next.Add(w.headway)
	}
}

// fill records the whole schedule's extremes (the counts of the test
// period come from the samples, Counters.Writes and the like).
func (w *writer) fill(t *model.MBMTCP) {
	t.BlockedWrites = w.blocked
	if w.headway > 0 {
		t.MaxLatenessMs = ms(w.maxLate)
	}
}
