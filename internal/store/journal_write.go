package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// The journal's writers: rows append to the segments, the small state
// goes to meta.json.

func (j *journal) Monitor(ctx context.Context, id Identity) (int64, error) {
	if err := checkIdentity(id); err != nil {
		return 0, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return 0, err
	}
	var next int64 = 1
	for i, m := range j.meta.Monitors {
		if m.Name == id.Name {
			if !maps.Equal(m.Labels, id.Labels) {
				j.meta.Monitors[i].Labels = maps.Clone(id.Labels)
				if err := j.saveMeta(); err != nil {
					return 0, err
				}
			}
			return m.ID, nil
		}
		next = max(next, m.ID+1)
	}
	j.meta.Monitors = append(j.meta.Monitors, jmonitor{ID: next, Name: id.Name, Labels: maps.Clone(id.Labels)})
	return next, j.saveMeta()
}

func (j *journal) Streams(ctx context.Context, monitor int64, streams []model.MonitorStream) ([]int32, error) {
	if err := checkStreams(streams); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return nil, err
	}
	var next int32 = 1
	for _, st := range j.meta.Streams {
		next = max(next, st.ID+1)
	}
	ids := make([]int32, len(streams))
	for i, st := range streams {
		k := slices.IndexFunc(j.meta.Streams, func(x jstream) bool { return x.Monitor == monitor && x.Name == st.Name })
		if k < 0 {
			j.meta.Streams = append(j.meta.Streams, jstream{ID: next, Monitor: monitor, MonitorStream: st})
			ids[i] = next
			next++
			continue
		}
		j.meta.Streams[k].MonitorStream = st
		ids[i] = j.meta.Streams[k].ID
	}
	if err := j.saveMeta(); err != nil {
		return nil, err
	}
	j.sids[monitor] = ids
	return slices.Clone(ids), nil
}

func (j *journal) ListStreams(ctx context.Context, monitor int64) (map[int32]model.MonitorStream, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[int32]model.MonitorStream{}
	for _, st := range j.meta.Streams {
		if st.Monitor == monitor {
			out[st.ID] = st.MonitorStream
		}
	}
	return out, nil
}

func (j *journal) ListMonitors(ctx context.Context) (map[string]int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[string]int64{}
	for _, m := range j.meta.Monitors {
		out[m.Name] = m.ID
	}
	return out, nil
}

// Write appends the batch's raw rows, then its long-lived ones, each set
// by one write(2). Every row is checked before anything is written; a
// crash between the two writes keeps the raw part (a replay of the
// batch then adds the rest).
func (j *journal) Write(ctx context.Context, monitor int64, b *Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return err
	}
	sids := j.sids[monitor]
	sid := func(i int32) (int32, error) {
		if i < 0 || int(i) >= len(sids) {
			return 0, fmt.Errorf("%w %d (monitor %d has %d streams registered)", ErrUnknownStream, i, monitor, len(sids))
		}
		return sids[i], nil
	}
	for _, p := range b.Probes {
		if _, err := sid(p.Stream); err != nil {
			return err
		}
	}
	for _, r := range b.Rollups {
		if _, err := sid(r.Stream); err != nil {
			return err
		}
	}
	for _, e := range b.Events {
		if e.Stream >= 0 {
			if _, err := sid(e.Stream); err != nil {
				return err
			}
		}
	}
	e := &j.enc
	e.reset()
	st := map[int64]*jstats{monitor: {}}
	var row jrow
	for _, p := range lateWins(b.Probes) {
		p.Stream, _ = sid(p.Stream)
		e.probe(monitor, &p)
		row.probe = p
		st[monitor].note(recProbes, &row)
	}
	for _, c := range b.Counters {
		e.counter(monitor, &c)
		row.count = c
		st[monitor].note(recCounters, &row)
	}
	if err := j.appendTo(&j.raw, e.done(), st); err != nil {
		return err
	}
	e.reset()
	st[monitor] = &jstats{}
	for _, r := range b.Rollups {
		r.Stream, _ = sid(r.Stream)
		e.rollup(monitor, &r)
		row.roll = r
		st[monitor].note(recRollups, &row)
	}
	var added []eventKey
	nextEvent := j.meta.NextEvent
	for _, ev := range b.Events {
		if ev.Stream >= 0 {
			ev.Stream, _ = sid(ev.Stream)
		}
		k := keyOf(monitor, &ev)
		if _, dup := j.evKeys[k]; dup || slices.Contains(added, k) {
			continue // the natural key: an event already stored stays as it is
		}
		if err := e.event(monitor, nextEvent, &ev); err != nil {
			return err
		}
		row.event = EventRow{ID: nextEvent, Event: ev}
		st[monitor].note(recEvents, &row)
		added = append(added, k)
		nextEvent++
	}
	if err := j.appendTo(&j.long, e.done(), st); err != nil {
		return err
	}
	for _, k := range added {
		j.evKeys[k] = struct{}{}
	}
	if nextEvent != j.meta.NextEvent {
		j.meta.NextEvent, j.metaDirty = nextEvent, true
	}
	return j.maybeSync(false)
}

func (j *journal) Restart(ctx context.Context, monitor int64, r RestartRow) error {
	if len(r.Version) > MaxNameLen {
		return fmt.Errorf("%w: version of %d bytes", ErrBadInput, len(r.Version))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return err
	}
	e := &j.enc
	e.reset()
	e.restart(monitor, &r)
	st := &jstats{}
	st.note(recRestarts, &jrow{rst: r})
	if err := j.appendTo(&j.long, e.done(), map[int64]*jstats{monitor: st}); err != nil {
		return err
	}
	return j.maybeSync(false)
}

func (j *journal) SetCapacity(ctx context.Context, monitor int64, r CapacityRow) error {
	if err := checkCapacity(r); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return err
	}
	caps := j.meta.Capacities
	if k := slices.IndexFunc(caps, func(c jcapacity) bool { return c.Monitor == monitor && c.FromNs == r.FromNs }); k >= 0 {
		caps[k].CapacityRow = r // the newest word on what held from then
	} else {
		caps = append(caps, jcapacity{Monitor: monitor, CapacityRow: r})
		slices.SortStableFunc(caps, func(a, b jcapacity) int { return cmp.Compare(a.FromNs, b.FromNs) })
		if len(caps) > maxCapacityRows {
			caps = slices.Delete(caps, 0, len(caps)-maxCapacityRows)
		}
	}
	j.meta.Capacities = caps
	return j.saveMeta()
}

func (j *journal) Capacities(ctx context.Context, monitor int64, from, to int64) ([]CapacityRow, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := []CapacityRow{}
	for _, c := range j.meta.Capacities { // by from_ns
		switch {
		case c.Monitor != monitor || c.FromNs >= to:
		case c.FromNs <= from:
			out = append(out[:0], c.CapacityRow) // the newest one at or before from
		default:
			out = append(out, c.CapacityRow)
		}
	}
	return out[:min(len(out), MaxListLimit)], nil
}

func (j *journal) InstanceID(ctx context.Context) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.meta.InstanceID != "" {
		return j.meta.InstanceID, nil
	}
	if err := j.writable(); err != nil {
		return "", err
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: instance ID: %w", err)
	}
	j.meta.InstanceID = hex.EncodeToString(b[:])
	return j.meta.InstanceID, j.saveMeta()
}

func (j *journal) ShipMark(ctx context.Context, dest string, monitor int64, t Table) (int64, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range j.meta.ShipMarks {
		if m.Dest == dest && m.Monitor == monitor && m.Table == t {
			return m.Mark, true, nil
		}
	}
	return 0, false, nil
}

// SetShipMark records the mark in memory; meta.json has it within
// journalSyncEvery (a crash before ships the rows past the older mark
// again, which the fleet store takes harmlessly).
func (j *journal) SetShipMark(ctx context.Context, dest string, monitor int64, t Table, mark int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.writable(); err != nil {
		return err
	}
	j.metaDirty = true
	for i, m := range j.meta.ShipMarks {
		if m.Dest == dest && m.Monitor == monitor && m.Table == t {
			j.meta.ShipMarks[i].Mark = mark
			return j.maybeSync(false)
		}
	}
	if len(j.meta.ShipMarks) >= maxShipMarks {
		return fmt.Errorf("%w: more than %d ship marks", ErrBadInput, maxShipMarks)
	}
	j.meta.ShipMarks = append(j.meta.ShipMarks, jmark{Dest: dest, Monitor: monitor, Table: t, Mark: mark})
	return j.maybeSync(false)
}

// noFloor is a floor below every row.
const noFloor = math.MinInt64
