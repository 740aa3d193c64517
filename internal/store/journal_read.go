package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/sonde-project/sonde/internal/model"
)

// The journal's readers. A read scans only the segments whose span of the
// table, for the monitor, meets its range, and holds at most one window
// of one stream's rows at a time (to order them and let a later record of
// a row win where the SQL stores upsert), never the journal.

// Windows of the sorted reads: the rows of one stream in one window are
// held at once (an hour of probes at 10/s is 36,000 rows).
const (
	probeWindow  = int64(3600e9)
	rollupWindow = int64(7 * 24 * 3600e9)
)

// segRef is a segment as a read sees it: its size when the read began and
// its span of the table read.
type segRef struct {
	path string
	size int64
	sp   jspan
	ids  jspan // events: their IDs
}

// refs returns the segments of set with rows of typ for the monitor
// (mon < 0: any) meeting [from, to), and the floors.
func (j *journal) refs(s *jset, typ byte, mon int64, from, to int64) ([]segRef, jfloors) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []segRef
	for _, g := range s.segs {
		var sp, ids jspan
		for m, st := range g.mons {
			if mon < 0 || m == mon {
				sp.merge(st.t[typ])
				ids.merge(st.evID)
			}
		}
		if sp.meets(from, to) {
			out = append(out, segRef{path: g.path, size: g.size, sp: sp, ids: ids})
		}
	}
	return out, j.meta.Floors
}

// scanRows calls fn for each row of typ of the monitor (mon < 0: any) in
// the segment.
func scanRows(r segRef, typ byte, mon int64, fn func(*jrow) error) error {
	return scanSegment(r.path, r.size, func(t byte, payload []byte) error {
		if t != typ {
			return nil
		}
		if m, n := binary.Varint(payload); mon >= 0 && (n <= 0 || m != mon) {
			return nil
		}
		return decodeRecord(t, payload, fn)
	})
}

// sortedRead is how one table reads in order: the row's key (stream),
// time and value, and which of two rows of the same key and time wins
// (nil: the first written).
type sortedRead[T any] struct {
	typ    byte
	window int64
	get    func(*jrow) (key int32, at int64, v T)
	later  func(kept, next *T) bool
}

type timed[T any] struct {
	at int64
	v  T
}

// readSorted calls fn for the monitor's rows of rd.typ in [from, to) at
// or above floor, by key (in the order of keys) then time, one per key
// and time.
func readSorted[T any](ctx context.Context, j *journal, s *jset, mon int64, keys []int32, from, to, floor int64, rd sortedRead[T], fn func(T) error) error {
	from = max(from, floor)
	if from >= to {
		return nil
	}
	refs, _ := j.refs(s, rd.typ, mon, from, to)
	if len(refs) == 0 {
		return nil
	}
	lo := int64(math.MaxInt64)
	for _, r := range refs {
		lo = min(lo, r.sp.min)
	}
	var rows []timed[T]
	for _, key := range keys {
		for w := max(from, lo); w < to; {
			end := min(satAdd(w, rd.window), to)
			rows = rows[:0]
			for _, r := range refs {
				if !r.sp.meets(w, end) {
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := scanRows(r, rd.typ, mon, func(row *jrow) error {
					if k, at, v := rd.get(row); k == key && at >= w && at < end {
						rows = append(rows, timed[T]{at, v})
					}
					return nil
				}); err != nil {
					return err
				}
			}
			sort.SliceStable(rows, func(a, b int) bool { return rows[a].at < rows[b].at })
			for i := 0; i < len(rows); {
				k := i
				for i++; i < len(rows) && rows[i].at == rows[k].at; i++ {
					if rd.later != nil && rd.later(&rows[k].v, &rows[i].v) {
						k = i
					}
				}
				if err := fn(rows[k].v); err != nil {
					return err
				}
			}
			next := to
			for _, r := range refs {
				if r.sp.max >= end {
					next = min(next, max(r.sp.min, end))
				}
			}
			w = next
		}
	}
	return nil
}

// streamIDs are the monitor's stream IDs, ascending.
func (j *journal) streamIDs(mon int64) []int32 {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ids []int32
	for _, st := range j.meta.Streams {
		if st.Monitor == mon {
			ids = append(ids, st.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func (j *journal) floors() jfloors {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.meta.Floors
}

var probeRead = sortedRead[model.ProbeSample]{
	typ: recProbes, window: probeWindow,
	get: func(r *jrow) (int32, int64, model.ProbeSample) { return r.probe.Stream, r.probe.SentNs, r.probe },
	// A late sample of a probe replaces its lost one (probeConflict).
	later: func(kept, next *model.ProbeSample) bool {
		return kept.Lost && !kept.Late && next.Lost && next.Late
	},
}

func (j *journal) Probes(ctx context.Context, monitor int64, from, to int64, fn func(model.ProbeSample) error) error {
	return readSorted(ctx, j, &j.raw, monitor, j.streamIDs(monitor), from, to, j.floors().Probes, probeRead, fn)
}

var counterRead = sortedRead[model.CounterSample]{
	typ: recCounters, window: probeWindow,
	get: func(r *jrow) (int32, int64, model.CounterSample) { return 0, r.count.TimeNs, r.count },
}

func (j *journal) Counters(ctx context.Context, monitor int64, from, to int64, fn func(model.CounterSample) error) error {
	return readSorted(ctx, j, &j.raw, monitor, []int32{0}, from, to, j.floors().Counters, counterRead, fn)
}

var rollupRead = sortedRead[Rollup]{
	typ: recRollups, window: rollupWindow,
	get: func(r *jrow) (int32, int64, Rollup) {
		v := r.roll
		v.Data = bytes.Clone(v.Data)
		return v.Stream, v.MinuteNs, v
	},
}

func (j *journal) Rollups(ctx context.Context, monitor int64, from, to int64, fn func(Rollup) error) error {
	return readSorted(ctx, j, &j.long, monitor, j.streamIDs(monitor), from, to, j.floors().Rollups, rollupRead, fn)
}

var restartRead = sortedRead[RestartRow]{
	typ: recRestarts, window: math.MaxInt64,
	get: func(r *jrow) (int32, int64, RestartRow) { return 0, r.rst.TimeNs, r.rst },
}

func (j *journal) Restarts(ctx context.Context, monitor int64, from, to int64) ([]RestartRow, error) {
	out := []RestartRow{}
	err := readSorted(ctx, j, &j.long, monitor, []int32{0}, from, to, j.floors().Restarts, restartRead, func(r RestartRow) error {
		if len(out) < MaxListLimit {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// gone: retention deleted the event.
func (f *jfloors) gone(e *EventRow) bool {
	return e.Event.EndNs < f.EventsEnd && e.ID <= f.EventsID
}

// events returns the monitor's events kept that match, ordered by less.
func (j *journal) events(ctx context.Context, mon, from, to int64, match func(*EventRow) bool, less func(a, b *EventRow) int) ([]EventRow, error) {
	refs, fl := j.refs(&j.long, recEvents, mon, from, to)
	var out []EventRow
	for _, r := range refs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := scanRows(r, recEvents, mon, func(row *jrow) error {
			if !fl.gone(&row.event) && match(&row.event) {
				out = append(out, row.event)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b EventRow) int { return less(&a, &b) })
	return out, nil
}

func (j *journal) Events(ctx context.Context, monitor int64, from, to int64, limit int) ([]model.MonitorEvent, error) {
	limit = min(max(limit, 0), MaxListLimit)
	evs, err := j.events(ctx, monitor, from, to, func(e *EventRow) bool { return e.Event.StartNs < to && e.Event.EndNs >= from },
		func(a, b *EventRow) int {
			if c := cmp.Compare(a.Event.StartNs, b.Event.StartNs); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
	out := []model.MonitorEvent{}
	for _, e := range evs[:min(len(evs), limit)] {
		out = append(out, e.Event)
	}
	return out, err
}

func (j *journal) EventsAfter(ctx context.Context, monitor int64, after int64, limit int) ([]EventRow, error) {
	limit = min(max(limit, 0), MaxListLimit)
	evs, err := j.events(ctx, monitor, math.MinInt64, math.MaxInt64, func(e *EventRow) bool { return e.ID > after },
		func(a, b *EventRow) int { return cmp.Compare(a.ID, b.ID) })
	if evs == nil {
		evs = []EventRow{}
	}
	return evs[:min(len(evs), limit)], err
}

func (j *journal) LastSample(ctx context.Context, monitor int64) (int64, bool, error) {
	refs, fl := j.refs(&j.raw, recProbes, monitor, math.MinInt64, math.MaxInt64)
	last, ok := int64(math.MinInt64), false
	for _, r := range refs {
		if r.sp.max >= fl.Probes {
			last, ok = max(last, r.sp.max), true
		}
	}
	return last, ok, nil
}

func (j *journal) FirstSample(ctx context.Context, monitor int64) (int64, bool, error) {
	return j.firstFrom(ctx, &j.raw, recProbes, monitor, j.floors().Probes)
}

// firstFrom is the earliest time at or after lo of the monitor's rows of
// typ: a span wholly past lo gives its start; a segment lo cuts is read.
func (j *journal) firstFrom(ctx context.Context, s *jset, typ byte, mon, lo int64) (int64, bool, error) {
	refs, _ := j.refs(s, typ, mon, lo, math.MaxInt64)
	best := int64(math.MaxInt64)
	ok := false
	for _, r := range refs {
		if r.sp.min >= lo && r.sp.min <= best {
			best, ok = r.sp.min, true
		}
	}
	for _, r := range refs {
		if r.sp.min >= lo || (ok && r.sp.min >= best) {
			continue
		}
		if err := scanRows(r, typ, mon, func(row *jrow) error {
			if at := row.at(typ); at >= lo && (!ok || at < best) {
				best, ok = at, true
			}
			return nil
		}); err != nil {
			return 0, false, err
		}
		if err := ctx.Err(); err != nil {
			return 0, false, err
		}
	}
	return best, ok, nil
}

// tableOf maps a shipped table to its record type, set and floor.
func (j *journal) tableOf(t Table) (byte, *jset, int64, error) {
	f := j.floors()
	switch t {
	case TableProbes:
		return recProbes, &j.raw, f.Probes, nil
	case TableCounters:
		return recCounters, &j.raw, f.Counters, nil
	case TableRollups:
		return recRollups, &j.long, f.Rollups, nil
	case TableRestarts:
		return recRestarts, &j.long, f.Restarts, nil
	}
	return 0, nil, 0, fmt.Errorf("%w: table %q", ErrBadInput, t)
}

func (j *journal) NextAfter(ctx context.Context, monitor int64, t Table, after int64) (int64, bool, error) {
	switch t {
	case TableCapacities:
		j.mu.Lock()
		defer j.mu.Unlock()
		for _, c := range j.meta.Capacities { // by from_ns
			if c.Monitor == monitor && c.FromNs > after {
				return c.FromNs, true, nil
			}
		}
		return 0, false, nil
	case TableEvents:
		evs, err := j.EventsAfter(ctx, monitor, after, 1)
		if err != nil || len(evs) == 0 {
			return 0, false, err
		}
		return evs[0].ID, true, nil
	}
	typ, s, floor, err := j.tableOf(t)
	if err != nil || after == math.MaxInt64 {
		return 0, false, err
	}
	return j.firstFrom(ctx, s, typ, monitor, max(after+1, floor))
}

func (j *journal) CountAfter(ctx context.Context, monitor int64, t Table, after int64, limit int64) (int64, error) {
	limit = max(limit, 0)
	var n int64
	switch t {
	case TableCapacities:
		j.mu.Lock()
		defer j.mu.Unlock()
		for _, c := range j.meta.Capacities {
			if c.Monitor == monitor && c.FromNs > after {
				n++
			}
		}
		return min(n, limit), nil
	case TableEvents:
		evs, err := j.events(ctx, monitor, math.MinInt64, math.MaxInt64, func(e *EventRow) bool { return e.ID > after },
			func(a, b *EventRow) int { return 0 })
		return min(int64(len(evs)), limit), err
	}
	typ, s, floor, err := j.tableOf(t)
	if err != nil || after == math.MaxInt64 {
		return 0, err
	}
	lo := max(after+1, floor)
	refs, _ := j.refs(s, typ, monitor, lo, math.MaxInt64)
	for _, r := range refs {
		if n >= limit {
			break
		}
		if r.sp.min >= lo {
			n += r.sp.n
			continue
		}
		if err := scanRows(r, typ, monitor, func(row *jrow) error {
			if row.at(typ) >= lo {
				n++
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return min(n, limit), nil
}
