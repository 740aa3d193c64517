package store

import (
	"context"
	"fmt"
	"math"
)

// Sources of a recorded capacity.
const (
	CapacityConfigured = "configured" // --up/--down
	CapacityLearnt     = "learnt"     // from the interface counters
)

// MaxCapacityBps bounds a recorded capacity (10 Tbit/s, the analysis' bound).
const MaxCapacityBps = 1e13

// CapacityRow is a monitor's link capacities from FromNs until its next
// row: what the daemon used to label load states and what a report uses
// for the inferred buffer and BDP. 0 is unknown; a source is
// CapacityConfigured, CapacityLearnt or "" (unknown).
type CapacityRow struct {
	FromNs     int64   `json:"from_ns"`
	UpBps      float64 `json:"up_bps"`
	DownBps    float64 `json:"down_bps"`
	UpSource   string  `json:"up_source,omitempty"`
	DownSource string  `json:"down_source,omitempty"`
}

func checkCapacity(r CapacityRow) error {
	for _, v := range []float64{r.UpBps, r.DownBps} {
		if !(v >= 0 && v <= MaxCapacityBps) || math.IsNaN(v) {
			return fmt.Errorf("%w: capacity %g bit/s: want 0 to %g", ErrBadInput, v, MaxCapacityBps)
		}
	}
	for _, s := range []string{r.UpSource, r.DownSource} {
		if s != "" && s != CapacityConfigured && s != CapacityLearnt {
			return fmt.Errorf("%w: capacity source %.40q: want %q, %q or empty", ErrBadInput, s, CapacityConfigured, CapacityLearnt)
		}
	}
	return nil
}

func (s *sqlStore) SetCapacity(ctx context.Context, monitor int64, r CapacityRow) error {
	if err := checkCapacity(r); err != nil {
		return err
	}
	// A second row at the same instant replaces the first: the newest word
	// on what held from then.
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO capacities (monitor_id, from_ns, up_bps, down_bps, up_source, down_source)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (monitor_id, from_ns) DO UPDATE SET up_bps = excluded.up_bps,
		down_bps = excluded.down_bps, up_source = excluded.up_source, down_source = excluded.down_source`),
		monitor, r.FromNs, r.UpBps, r.DownBps, r.UpSource, r.DownSource); err != nil {
		return fmt.Errorf("store: record capacity: %w", err)
	}
	return nil
}

func (s *sqlStore) Capacities(ctx context.Context, monitor int64, from, to int64) ([]CapacityRow, error) {
	// The row in effect at from (the newest one before it), then those
	// that start in [from, to).
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT from_ns, up_bps, down_bps, up_source, down_source FROM capacities
		WHERE monitor_id = ? AND from_ns >= COALESCE((SELECT MAX(from_ns) FROM capacities WHERE monitor_id = ? AND from_ns <= ?), ?)
		AND from_ns < ? ORDER BY from_ns LIMIT ?`), monitor, monitor, from, from, to, MaxListLimit)
	if err != nil {
		return nil, fmt.Errorf("store: read capacities: %w", err)
	}
	defer rows.Close()
	out := []CapacityRow{}
	for rows.Next() {
		var r CapacityRow
		if err := rows.Scan(&r.FromNs, &r.UpBps, &r.DownBps, &r.UpSource, &r.DownSource); err != nil {
			return nil, fmt.Errorf("store: read capacities: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
