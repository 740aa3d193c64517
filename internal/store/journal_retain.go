package store

import (
	"context"
	"math"
	"time"
)

// Retain raises the journal's floors (rows below them are gone to every
// read) and removes the segments wholly below them. The counts are of
// rows written below the new floors and above the old ones (a replayed
// row counts each time it was written). Besides age, each set's byte
// budget drops its oldest segment when over (appendTo), whatever the
// hold: the journal stays bounded even when shipping is stuck.
func (j *journal) Retain(ctx context.Context, r Retention, nowNs int64) (Deleted, error) {
	var d Deleted
	hold := noHold
	if r.Hold != nil {
		hold = *r.Hold
	}
	cut := func(age time.Duration) int64 { return nowNs - int64(age) }
	old := j.floors()
	nf := old
	if r.Raw > 0 {
		nf.Probes = max(old.Probes, min(cut(r.Raw), hold.Probes))
		nf.Counters = max(old.Counters, min(cut(r.Raw), hold.Counters))
	}
	if r.Rollups > 0 {
		nf.Rollups = max(old.Rollups, min(cut(r.Rollups), hold.Rollups))
	}
	if r.Events > 0 {
		// An event goes when it ended before the cut and was shipped:
		// raising both bounds at once deletes no event that either call
		// alone would have kept for a reason of its own.
		nf.EventsEnd = max(old.EventsEnd, cut(r.Events))
		nf.EventsID = max(old.EventsID, hold.EventID)
		nf.Restarts = max(old.Restarts, min(cut(r.Events), hold.Restarts))
	}
	if nf == old {
		return d, nil
	}
	for _, c := range []struct {
		typ      byte
		s        *jset
		from, to int64
		n        *int64
	}{
		{recProbes, &j.raw, old.Probes, nf.Probes, &d.Probes},
		{recCounters, &j.raw, old.Counters, nf.Counters, &d.Counters},
		{recRollups, &j.long, old.Rollups, nf.Rollups, &d.Rollups},
		{recRestarts, &j.long, old.Restarts, nf.Restarts, &d.Restarts},
	} {
		if c.to <= c.from {
			continue
		}
		refs, _ := j.refs(c.s, c.typ, -1, c.from, c.to)
		for _, ref := range refs {
			if err := scanRows(ref, c.typ, -1, func(row *jrow) error {
				if at := row.at(c.typ); at >= c.from && at < c.to {
					*c.n++
				}
				return nil
			}); err != nil {
				return d, err
			}
		}
	}
	if nf.EventsEnd != old.EventsEnd || nf.EventsID != old.EventsID {
		refs, _ := j.refs(&j.long, recEvents, -1, math.MinInt64, nf.EventsEnd)
		for _, ref := range refs {
			if err := scanRows(ref, recEvents, -1, func(row *jrow) error {
				if !old.gone(&row.event) && nf.gone(&row.event) {
					d.Events++
				}
				return nil
			}); err != nil {
				return d, err
			}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return d, err
	}
	j.meta.Floors = nf
	if err := j.saveMeta(); err != nil {
		return d, err
	}
	// Segments wholly below the floors go (never the one appended to).
	for _, s := range []*jset{&j.raw, &j.long} {
		for len(s.segs) > 1 && below(s.segs[0], &nf) {
			if err := j.dropOldest(s); err != nil {
				return d, err
			}
		}
	}
	return d, ctx.Err()
}

// below: every row of the segment is under the floors.
func below(g *jseg, f *jfloors) bool {
	for _, st := range g.mons {
		for typ, floor := range map[byte]int64{recProbes: f.Probes, recCounters: f.Counters, recRollups: f.Rollups, recRestarts: f.Restarts, recEvents: f.EventsEnd} {
			if sp := st.t[typ]; sp.n > 0 && sp.max >= floor {
				return false
			}
		}
		if st.evID.n > 0 && st.evID.max > f.EventsID {
			return false
		}
	}
	return true
}
