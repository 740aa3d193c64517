package store

import (
	"context"
	"fmt"
	"time"
)

// Retention says how long rows are kept; a zero age keeps them forever.
type Retention struct {
	Raw     time.Duration // probe samples and counters
	Rollups time.Duration // per-minute rollups
	Events  time.Duration // events and restarts
	// Batch bounds the rows one DELETE removes, so a first pass over a
	// year of samples neither holds the write lock nor grows the WAL for
	// long: each batch is its own transaction.
	Batch int
	// Hold, if not nil, keeps what a shipper has not had confirmed yet,
	// whatever its age (internal/monitor/ship).
	Hold *Hold
}

// Hold says which rows retention must keep: those sent, measured or
// started at or after the times below, and events of a higher ID.
type Hold struct {
	Probes, Counters, Rollups, Restarts int64 // times (ns)
	EventID                             int64 // events.id
}

// noHold holds nothing back.
var noHold = Hold{Probes: 1<<63 - 1, Counters: 1<<63 - 1, Rollups: 1<<63 - 1, Restarts: 1<<63 - 1, EventID: 1<<63 - 1}

// DefaultRetention keeps raw samples 30 days, rollups 5 years and events
// forever (the defaults), deleting 10,000 rows per batch.
var DefaultRetention = Retention{Raw: 30 * 24 * time.Hour, Rollups: 5 * 365 * 24 * time.Hour, Batch: 10_000}

// Deleted counts the rows one Retain removed.
type Deleted struct {
	Probes, Counters, Rollups, Events, Restarts int64
}

func (s *sqlStore) Retain(ctx context.Context, r Retention, nowNs int64) (Deleted, error) {
	var d Deleted
	if r.Batch <= 0 {
		r.Batch = DefaultRetention.Batch
	}
	hold := noHold
	if r.Hold != nil {
		hold = *r.Hold
	}
	cut := func(age time.Duration) int64 { return nowNs - int64(age) }
	rawCut, counterCut, rollCut := min(cut(r.Raw), hold.Probes), min(cut(r.Raw), hold.Counters), min(cut(r.Rollups), hold.Rollups)
	// PostgreSQL: whole days first (a partition dropped is one statement
	// whatever its rows), then the rows of the day the cut falls in.
	for _, p := range []struct {
		table string
		age   time.Duration
		cut   int64
		n     *int64
	}{{"probes", r.Raw, rawCut, &d.Probes}, {"counters", r.Raw, counterCut, &d.Counters}, {"rollups", r.Rollups, rollCut, &d.Rollups}} {
		if p.age <= 0 {
			continue
		}
		n, err := s.dropOldPartitions(ctx, p.table, p.cut)
		*p.n += n
		if err != nil {
			return d, err
		}
	}
	var sids []int64
	if r.Raw > 0 || r.Rollups > 0 {
		rows, err := s.db.QueryContext(ctx, `SELECT id FROM streams`)
		if err != nil {
			return d, fmt.Errorf("store: retention: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return d, fmt.Errorf("store: retention: %w", err)
			}
			sids = append(sids, id)
		}
		rows.Close()
	}
	// Per stream, so each batch is a range of the primary key, with no
	// index on time alone (which would double a probe row's size).
	for _, sid := range sids {
		if r.Raw > 0 {
			n, err := s.deleteBatches(ctx, r.Batch, `DELETE FROM probes WHERE sid = ? AND sent_ns IN
				(SELECT sent_ns FROM probes WHERE sid = ? AND sent_ns < ? ORDER BY sent_ns LIMIT ?)`, sid, sid, rawCut)
			d.Probes += n
			if err != nil {
				return d, err
			}
		}
		if r.Rollups > 0 {
			n, err := s.deleteBatches(ctx, r.Batch, `DELETE FROM rollups WHERE sid = ? AND minute_ns IN
				(SELECT minute_ns FROM rollups WHERE sid = ? AND minute_ns < ? ORDER BY minute_ns LIMIT ?)`, sid, sid, rollCut)
			d.Rollups += n
			if err != nil {
				return d, err
			}
		}
	}
	if r.Raw > 0 {
		n, err := s.deleteBatches(ctx, r.Batch, `DELETE FROM counters WHERE (monitor_id, time_ns) IN
			(SELECT monitor_id, time_ns FROM counters WHERE time_ns < ? LIMIT ?)`, counterCut)
		d.Counters += n
		if err != nil {
			return d, err
		}
	}
	if r.Events > 0 {
		n, err := s.deleteBatches(ctx, r.Batch, `DELETE FROM events WHERE id IN
			(SELECT id FROM events WHERE end_ns < ? AND id <= ? LIMIT ?)`, cut(r.Events), hold.EventID)
		d.Events += n
		if err != nil {
			return d, err
		}
		n, err = s.deleteBatches(ctx, r.Batch, `DELETE FROM restarts WHERE (monitor_id, time_ns) IN
			(SELECT monitor_id, time_ns FROM restarts WHERE time_ns < ? LIMIT ?)`, min(cut(r.Events), hold.Restarts))
		d.Restarts += n
		if err != nil {
			return d, err
		}
	}
	return d, nil
}

// deleteBatches runs query (its last argument the batch size) until it
// deletes fewer than batch rows, each run its own transaction.
func (s *sqlStore) deleteBatches(ctx context.Context, batch int, query string, args ...any) (int64, error) {
	var total int64
	args = append(args, batch)
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		res, err := s.db.ExecContext(ctx, s.q(query), args...)
		if err != nil {
			return total, fmt.Errorf("store: retention: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}
