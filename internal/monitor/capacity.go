package monitor

import (
	"context"
	"math"
	"time"

	"github.com/sonde-project/sonde/internal/store"
)

// Recording the link capacities the daemon uses, so a report can infer
// the buffer of a loaded episode (B = C × added delay) from raw samples
// long after: what --up/--down configured, what the counters taught the
// tracker, or unknown, from each start on and whenever it changes.
const (
	// capEvery bounds how often a learnt capacity that keeps creeping up
	// is recorded again (a row a minute at most); capRel is the change
	// that is worth a row.
	capEvery = time.Minute
	capRel   = 0.05
)

// capRecorder is the last capacity row recorded and when to retry one
// the store refused.
type capRecorder struct {
	last      store.CapacityRow
	have      bool
	nextRetry int64
	failed    bool
}

// capacityNow is the capacity in use: the tracker's (configured, else
// learnt, else 0), or the plan's without an interface.
func (c *core) capacityNow(now int64) store.CapacityRow {
	r := store.CapacityRow{FromNs: now, UpBps: c.plan.UpBps, DownBps: c.plan.DownBps}
	learntUp, learntDown := false, false
	if c.tracker != nil {
		st := c.tracker.Status()
		r.UpBps, r.DownBps, learntUp, learntDown = st.UpBps, st.DownBps, st.UpLearnt, st.DownLearnt
	}
	source := func(bps float64, learnt bool) string {
		switch {
		case bps <= 0:
			return ""
		case learnt:
			return store.CapacityLearnt
		}
		return store.CapacityConfigured
	}
	r.UpSource, r.DownSource = source(r.UpBps, learntUp), source(r.DownBps, learntDown)
	return r
}

// recordCapacity writes the capacity in use when it is the first of this
// start (start), or has changed: a source or a direction becoming known
// at once, a value by capRel or more (a learnt one at most every
// capEvery). A capacity
// first learnt replaces the row that had it unknown: the tracker labelled
// no probe loaded in that direction before it knew the capacity, and the
// episode that taught it starts about when it was learnt, so the row
// covers that episode's start however late the tick that saw it.
func (c *core) recordCapacity(ctx context.Context, now int64, start bool) error {
	rec := &c.capRec
	r := c.capacityNow(now)
	if !start {
		if rec.failed && now < rec.nextRetry {
			return nil
		}
		if rec.have && !rec.failed && !capChanged(rec.last, r, now) {
			return nil
		}
		if rec.have && (rec.last.UpBps <= 0 && r.UpBps > 0 || rec.last.DownBps <= 0 && r.DownBps > 0) &&
			(rec.last.UpBps <= 0 || rec.last.UpBps == r.UpBps) && (rec.last.DownBps <= 0 || rec.last.DownBps == r.DownBps) {
			r.FromNs = rec.last.FromNs
		}
	}
	if err := c.st.SetCapacity(ctx, c.mid, r); err != nil {
		if !rec.failed {
			c.log.Printf("record link capacity: %v", oneLine(err))
		}
		rec.failed, rec.nextRetry = true, now+int64(retryEvery)
		return err
	}
	rec.last, rec.have, rec.failed = r, true, false
	return nil
}

// capChanged says whether r is worth a new row after last: a source
// changed, or a value moved by capRel or more (a learnt one, which creeps
// up as the link shows more, at most every capEvery).
func capChanged(last, r store.CapacityRow, now int64) bool {
	changed := func(a, b float64, was, is string) bool {
		switch {
		case was != is:
			return true
		case math.Abs(a-b) <= capRel*math.Max(a, b):
			return false
		}
		return is != store.CapacityLearnt || now-last.FromNs >= int64(capEvery)
	}
	return changed(last.UpBps, r.UpBps, last.UpSource, r.UpSource) || changed(last.DownBps, r.DownBps, last.DownSource, r.DownSource)
}
