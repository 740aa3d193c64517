package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sonde-project/sonde/internal/model"
)

// Table names a table a shipper sends by watermark.
type Table string

// The tables a shipper sends. Each has a watermark column: a time, or the
// event ID for events (their times do not grow with the order they are
// written in).
const (
	TableRollups    Table = "rollups"
	TableEvents     Table = "events"
	TableRestarts   Table = "restarts"
	TableCapacities Table = "capacities"
	TableCounters   Table = "counters"
	TableProbes     Table = "probes"
)

// Shipping is the monitor's side of shipping, on its own store: the
// instance ID, the watermarks, and finding the rows past them.
type Shipping interface {
	// InstanceID returns this store's instance ID, generating it (128
	// random bits, hex) the first time: a monitor keeps it across
	// restarts, and a fleet store binds a monitor's name to it.
	InstanceID(ctx context.Context) (string, error)
	// ShipMark returns the watermark of table for the monitor's shipping
	// to dest (ok false: nothing confirmed yet); SetShipMark records it.
	ShipMark(ctx context.Context, dest string, monitor int64, t Table) (mark int64, ok bool, err error)
	SetShipMark(ctx context.Context, dest string, monitor int64, t Table, mark int64) error
	// NextAfter returns the smallest watermark value of the monitor's
	// rows of t above after (ok false: none).
	NextAfter(ctx context.Context, monitor int64, t Table, after int64) (v int64, ok bool, err error)
	// CountAfter counts the monitor's rows of t above after, up to limit.
	CountAfter(ctx context.Context, monitor int64, t Table, after int64, limit int64) (int64, error)
	// EventsAfter returns up to limit of the monitor's events with an ID
	// above after, by ID; Stream is the store's stream ID.
	EventsAfter(ctx context.Context, monitor int64, after int64, limit int) ([]EventRow, error)
}

// EventRow is an event with its store ID.
type EventRow struct {
	ID    int64
	Event model.MonitorEvent
}

func (s *sqlStore) InstanceID(ctx context.Context) (string, error) {
	var id string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM local_settings WHERE name = ?`), "instance_id").Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: instance ID: %w", err)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: instance ID: %w", err)
	}
	// Two opens racing: the first one's ID stays.
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO local_settings (name, value) VALUES (?, ?) ON CONFLICT DO NOTHING`),
		"instance_id", hex.EncodeToString(b[:])); err != nil {
		return "", fmt.Errorf("store: instance ID: %w", err)
	}
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT value FROM local_settings WHERE name = ?`), "instance_id").Scan(&id); err != nil {
		return "", fmt.Errorf("store: instance ID: %w", err)
	}
	return id, nil
}

func (s *sqlStore) ShipMark(ctx context.Context, dest string, monitor int64, t Table) (int64, bool, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT mark FROM ship_marks WHERE dest = ? AND monitor_id = ? AND tbl = ?`), dest, monitor, string(t)).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("store: %s watermark: %w", t, err)
	}
	return v, true, nil
}

func (s *sqlStore) SetShipMark(ctx context.Context, dest string, monitor int64, t Table, mark int64) error {
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO ship_marks (dest, monitor_id, tbl, mark) VALUES (?, ?, ?, ?)
		ON CONFLICT (dest, monitor_id, tbl) DO UPDATE SET mark = excluded.mark`), dest, monitor, string(t), mark); err != nil {
		return fmt.Errorf("store: %s watermark: %w", t, err)
	}
	return nil
}

// nextQueries find the next watermark value per table: per stream along
// the primary key where the table is keyed by stream (one seek each).
var nextQueries = map[Table]string{
	TableRollups:    `SELECT MIN((SELECT MIN(minute_ns) FROM rollups WHERE sid = s.id AND minute_ns > ?)) FROM streams s WHERE s.monitor_id = ?`,
	TableProbes:     `SELECT MIN((SELECT MIN(sent_ns) FROM probes WHERE sid = s.id AND sent_ns > ?)) FROM streams s WHERE s.monitor_id = ?`,
	TableCounters:   `SELECT MIN(time_ns) FROM counters WHERE time_ns > ? AND monitor_id = ?`,
	TableEvents:     `SELECT MIN(id) FROM events WHERE id > ? AND monitor_id = ?`,
	TableRestarts:   `SELECT MIN(time_ns) FROM restarts WHERE time_ns > ? AND monitor_id = ?`,
	TableCapacities: `SELECT MIN(from_ns) FROM capacities WHERE from_ns > ? AND monitor_id = ?`,
}

var countQueries = map[Table]string{
	TableRollups:    `SELECT COUNT(*) FROM (SELECT 1 FROM rollups r JOIN streams s ON r.sid = s.id WHERE r.minute_ns > ? AND s.monitor_id = ? LIMIT ?) x`,
	TableProbes:     `SELECT COUNT(*) FROM (SELECT 1 FROM probes p JOIN streams s ON p.sid = s.id WHERE p.sent_ns > ? AND s.monitor_id = ? LIMIT ?) x`,
	TableCounters:   `SELECT COUNT(*) FROM (SELECT 1 FROM counters WHERE time_ns > ? AND monitor_id = ? LIMIT ?) x`,
	TableEvents:     `SELECT COUNT(*) FROM (SELECT 1 FROM events WHERE id > ? AND monitor_id = ? LIMIT ?) x`,
	TableRestarts:   `SELECT COUNT(*) FROM (SELECT 1 FROM restarts WHERE time_ns > ? AND monitor_id = ? LIMIT ?) x`,
	TableCapacities: `SELECT COUNT(*) FROM (SELECT 1 FROM capacities WHERE from_ns > ? AND monitor_id = ? LIMIT ?) x`,
}

func (s *sqlStore) NextAfter(ctx context.Context, monitor int64, t Table, after int64) (int64, bool, error) {
	q, ok := nextQueries[t]
	if !ok {
		return 0, false, fmt.Errorf("%w: table %q", ErrBadInput, t)
	}
	var v sql.NullInt64
	if err := s.db.QueryRowContext(ctx, s.q(q), after, monitor).Scan(&v); err != nil {
		return 0, false, fmt.Errorf("store: next %s: %w", t, err)
	}
	return v.Int64, v.Valid, nil
}

func (s *sqlStore) CountAfter(ctx context.Context, monitor int64, t Table, after int64, limit int64) (int64, error) {
	q, ok := countQueries[t]
	if !ok {
		return 0, fmt.Errorf("%w: table %q", ErrBadInput, t)
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, s.q(q), after, monitor, max(limit, 0)).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count %s: %w", t, err)
	}
	return n, nil
}

func (s *sqlStore) EventsAfter(ctx context.Context, monitor int64, after int64, limit int) ([]EventRow, error) {
	limit = min(max(limit, 0), MaxListLimit)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, kind, start_ns, end_ns, stream_id, text, detail, flags FROM events
		WHERE monitor_id = ? AND id > ? ORDER BY id LIMIT ?`), monitor, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	defer rows.Close()
	out := []EventRow{}
	for rows.Next() {
		var (
			r             EventRow
			kind          string
			stream        int64
			detail, flags string
		)
		e := &r.Event
		if err := rows.Scan(&r.ID, &kind, &e.StartNs, &e.EndNs, &stream, &e.Text, &detail, &flags); err != nil {
			return nil, fmt.Errorf("store: read events: %w", err)
		}
		e.Kind, e.Stream = model.EventKind(kind), int32(stream)
		if err := json.Unmarshal([]byte(detail), &e.Detail); err != nil {
			return nil, fmt.Errorf("store: event detail: %w", err)
		}
		if err := json.Unmarshal([]byte(flags), &e.Flags); err != nil {
			return nil, fmt.Errorf("store: event flags: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
