package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// HourNs is the span of a row of the fleet's hourly aggregate.
const HourNs = int64(3600e9)

// FleetReader is what the fleet report reads from a store shared by many
// monitors, and the job that keeps its hourly aggregate (rollup_hours,
// migration 4; docs/fleet.md). It is separate from Monitors: a monitor
// never calls it. Every read is bounded or streamed.
type FleetReader interface {
	// FleetMonitors lists every monitor with its labels and streams.
	FleetMonitors(ctx context.Context) ([]FleetMonitor, error)
	// HourRows calls fn for the merged hours of q's monitors whose hour
	// lies wholly in [q.FromNs, q.ToNs) and is not marked dirty, by stream
	// then hour. The row's Data is valid only until fn returns.
	HourRows(ctx context.Context, q FleetQuery, fn func(HourRow) error) error
	// MinuteRows calls fn for the minute rollups HourRows does not stand
	// for: those of marked hours, and those of the range's partial first
	// and last hours. Stream is the store's stream ID.
	MinuteRows(ctx context.Context, q FleetQuery, fn func(Rollup) error) error
	// FleetEvents returns up to limit events of the given kinds of q's
	// monitors that overlap the range, oldest first.
	FleetEvents(ctx context.Context, q FleetQuery, kinds []model.EventKind, limit int) ([]FleetEvent, error)
	// DirtyHours returns up to limit hours whose minute rollups changed
	// since they were merged, oldest first.
	DirtyHours(ctx context.Context, limit int) ([]StreamHour, error)
	// MergeHours, in one transaction, removes the marks of the streams'
	// hour, reads their minute rollups, and stores what merge makes of
	// each stream's (a stream without any: its hour's row is deleted). A
	// rollup written meanwhile marks its hour again. At most
	// MaxMergeStreams streams.
	MergeHours(ctx context.Context, hourNs int64, sids []int32, merge func([]Rollup) (HourRow, error)) error
}

// FleetQuery selects monitors (nil: all) and a range [FromNs, ToNs).
// With Shards > 1, HourRows and MinuteRows read only the monitors whose
// ID is Shard modulo Shards, so that readers in parallel hold disjoint
// monitors.
type FleetQuery struct {
	Monitors      []int64
	FromNs, ToNs  int64
	Shards, Shard int
}

// where is the query's monitor selection on streams aliased s.
func (q FleetQuery) where() string {
	w := monitorClause("s.monitor_id", q.Monitors)
	if q.Shards > 1 {
		w += fmt.Sprintf(" AND s.monitor_id %% %d = %d", q.Shards, q.Shard)
	}
	return w
}

// StreamHour names one stream's hour.
type StreamHour struct {
	Stream int32 // store stream ID
	HourNs int64
}

// HourRow is one stream's hour merged from its minute rollups: the sums
// as in Rollup, and Data in the fleet package's encoding (opaque here).
type HourRow struct {
	Stream           int32 // store stream ID
	HourNs           int64
	Minutes          int
	Sent, Lost, Late uint64
	SumNs, SumSqNs   float64
	MinNs, MaxNs     int64
	Data             []byte
}

// FleetEvent is a stored event with its monitor.
type FleetEvent struct {
	Monitor int64
	model.MonitorEvent
}

// MaxHourData bounds an hour's encoded data; MaxMergeStreams the streams
// of one MergeHours call.
const (
	MaxHourData     = 256 << 10
	MaxMergeStreams = 1000
)

func floorHour(t int64) int64 { return units.FloorTo(t, HourNs) }

func ceilHour(t int64) int64 { return units.CeilTo(t, HourNs) }

// monitorClause is "AND col IN (…)" for a monitor list (IDs are integers
// the store itself handed out, formatted here, never a client's text).
func monitorClause(col string, ids []int64) string {
	if ids == nil {
		return ""
	}
	if len(ids) == 0 {
		return " AND 1 = 0"
	}
	var b strings.Builder
	b.WriteString(" AND " + col + " IN (")
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(')')
	return b.String()
}

func (s *sqlStore) HourRows(ctx context.Context, q FleetQuery, fn func(HourRow) error) error {
	from, to := ceilHour(q.FromNs), floorHour(q.ToNs)
	if from >= to {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT h.sid, h.hour_ns, h.minutes, h.sent, h.lost, h.late, h.sum_ns, h.sum_sq_ns, h.min_ns, h.max_ns, h.data
		FROM rollup_hours h JOIN streams s ON h.sid = s.id
		WHERE h.hour_ns >= ? AND h.hour_ns < ?`+q.where()+`
		AND NOT EXISTS (SELECT 1 FROM rollup_hours_dirty d WHERE d.sid = h.sid AND d.hour_ns = h.hour_ns)
		ORDER BY h.sid, h.hour_ns`), from, to)
	if err != nil {
		return fmt.Errorf("store: read hours: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h                     HourRow
			sid, sent, lost, late int64
			data                  sql.RawBytes // not copied: a month is millions of rows
		)
		if err := rows.Scan(&sid, &h.HourNs, &h.Minutes, &sent, &lost, &late, &h.SumNs, &h.SumSqNs, &h.MinNs, &h.MaxNs, &data); err != nil {
			return fmt.Errorf("store: read hours: %w", err)
		}
		h.Stream, h.Sent, h.Lost, h.Late, h.Data = int32(sid), uint64(sent), uint64(lost), uint64(late), data
		if err := fn(h); err != nil {
			return err
		}
	}
	return rows.Err()
}

const rollupCols = `r.sid, r.minute_ns, r.sent, r.lost, r.late, r.sum_ns, r.sum_sq_ns, r.min_ns, r.max_ns, r.data`

func scanRollups(rows *sql.Rows, fn func(Rollup) error) error {
	defer rows.Close()
	for rows.Next() {
		var (
			r                     Rollup
			sid, sent, lost, late int64
		)
		if err := rows.Scan(&sid, &r.MinuteNs, &sent, &lost, &late, &r.SumNs, &r.SumSqNs, &r.MinNs, &r.MaxNs, &r.Data); err != nil {
			return fmt.Errorf("store: read rollups: %w", err)
		}
		r.Stream, r.Sent, r.Lost, r.Late = int32(sid), uint32(sent), uint32(lost), uint32(late)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqlStore) MinuteRows(ctx context.Context, q FleetQuery, fn func(Rollup) error) error {
	mon := q.where()
	from, to := ceilHour(q.FromNs), floorHour(q.ToNs)
	// The partial hours at the ends (the whole range when it lies within
	// one hour).
	edges := [][2]int64{{q.FromNs, min(from, q.ToNs)}, {to, q.ToNs}}
	if from >= to {
		edges = [][2]int64{{q.FromNs, q.ToNs}}
	}
	for _, e := range edges {
		if e[0] >= e[1] {
			continue
		}
		rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+rollupCols+` FROM rollups r JOIN streams s ON r.sid = s.id
			WHERE r.minute_ns >= ? AND r.minute_ns < ?`+mon+` ORDER BY r.sid, r.minute_ns`), e[0], e[1])
		if err != nil {
			return fmt.Errorf("store: read rollups: %w", err)
		}
		if err := scanRollups(rows, fn); err != nil {
			return err
		}
	}
	if from >= to {
		return nil
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+rollupCols+` FROM rollup_hours_dirty d
		JOIN streams s ON d.sid = s.id
		JOIN rollups r ON r.sid = d.sid AND r.minute_ns >= d.hour_ns AND r.minute_ns < d.hour_ns + ?
		WHERE d.hour_ns >= ? AND d.hour_ns < ?`+mon+` ORDER BY r.sid, r.minute_ns`), HourNs, from, to)
	if err != nil {
		return fmt.Errorf("store: read rollups of changed hours: %w", err)
	}
	return scanRollups(rows, fn)
}

func (s *sqlStore) FleetEvents(ctx context.Context, q FleetQuery, kinds []model.EventKind, limit int) ([]FleetEvent, error) {
	limit = min(max(limit, 0), MaxListLimit)
	if len(kinds) == 0 || len(kinds) > 16 {
		return nil, fmt.Errorf("%w: %d event kinds: want 1 to 16", ErrBadInput, len(kinds))
	}
	args := []any{}
	marks := make([]string, len(kinds))
	for i, k := range kinds {
		marks[i] = "?"
		args = append(args, string(k))
	}
	args = append(args, q.ToNs, q.FromNs, limit)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT monitor_id, kind, start_ns, end_ns, stream_id, text, detail, flags FROM events
		WHERE kind IN (`+strings.Join(marks, ", ")+`) AND start_ns < ? AND end_ns >= ?`+monitorClause("monitor_id", q.Monitors)+`
		ORDER BY start_ns, id LIMIT ?`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	defer rows.Close()
	var out []FleetEvent
	for rows.Next() {
		var (
			e             FleetEvent
			kind          string
			stream        int64
			detail, flags string
		)
		if err := rows.Scan(&e.Monitor, &kind, &e.StartNs, &e.EndNs, &stream, &e.Text, &detail, &flags); err != nil {
			return nil, fmt.Errorf("store: read events: %w", err)
		}
		e.Kind, e.Stream = model.EventKind(kind), int32(stream)
		if err := json.Unmarshal([]byte(detail), &e.Detail); err != nil {
			return nil, fmt.Errorf("store: event detail: %w", err)
		}
		if err := json.Unmarshal([]byte(flags), &e.Flags); err != nil {
			return nil, fmt.Errorf("store: event flags: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func (s *sqlStore) DirtyHours(ctx context.Context, limit int) ([]StreamHour, error) {
	limit = min(max(limit, 0), MaxListLimit)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT sid, hour_ns FROM rollup_hours_dirty ORDER BY hour_ns, sid LIMIT ?`), limit)
	if err != nil {
		return nil, fmt.Errorf("store: changed hours: %w", err)
	}
	defer rows.Close()
	var out []StreamHour
	for rows.Next() {
		var (
			sid int64
			h   StreamHour
		)
		if err := rows.Scan(&sid, &h.HourNs); err != nil {
			return nil, fmt.Errorf("store: changed hours: %w", err)
		}
		h.Stream = int32(sid)
		out = append(out, h)
	}
	return out, rows.Err()
}

func (s *sqlStore) MergeHours(ctx context.Context, hourNs int64, sids []int32, merge func([]Rollup) (HourRow, error)) error {
	if len(sids) == 0 {
		return nil
	}
	if len(sids) > MaxMergeStreams || hourNs%HourNs != 0 {
		return fmt.Errorf("%w: %d streams of hour %d: want up to %d, on an hour", ErrBadInput, len(sids), hourNs, MaxMergeStreams)
	}
	ids := make([]int64, len(sids))
	for i, sid := range sids {
		ids[i] = int64(sid)
	}
	in := monitorClause("sid", ids)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin hours: %w", err)
	}
	defer tx.Rollback()
	// The marks go first: a rollup committed after this statement marks
	// its hour again (on PostgreSQL its insert waits for this
	// transaction), so the next run merges it; one committed before it is
	// read below and merged now.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM rollup_hours_dirty WHERE hour_ns = ?`+in), hourNs); err != nil {
		return fmt.Errorf("store: unmark hours: %w", err)
	}
	rows, err := tx.QueryContext(ctx, s.q(`SELECT `+rollupCols+` FROM rollups r WHERE r.minute_ns >= ? AND r.minute_ns < ?`+monitorClause("r.sid", ids)+` ORDER BY r.sid, r.minute_ns`),
		hourNs, hourNs+HourNs)
	if err != nil {
		return fmt.Errorf("store: read hours: %w", err)
	}
	bySid := map[int32][]Rollup{}
	if err := scanRollups(rows, func(r Rollup) error {
		bySid[r.Stream] = append(bySid[r.Stream], r)
		return nil
	}); err != nil {
		return err
	}
	ins := inserter{s: s, tx: tx, ctx: ctx}
	var empty []int64
	for _, sid := range sids {
		mins := bySid[sid]
		if len(mins) == 0 {
			empty = append(empty, int64(sid))
			continue
		}
		row, err := merge(mins)
		if err != nil {
			return fmt.Errorf("store: merge hour %d of stream %d: %w", hourNs, sid, err)
		}
		if len(row.Data) > MaxHourData {
			return fmt.Errorf("%w: hour data of %d bytes, the limit is %d", ErrBadInput, len(row.Data), MaxHourData)
		}
		ins.add(hourTable, 11, int64(sid), hourNs, row.Minutes, int64(row.Sent), int64(row.Lost), int64(row.Late), row.SumNs, row.SumSqNs, row.MinNs, row.MaxNs, row.Data)
	}
	ins.flush()
	if ins.err != nil {
		return ins.err
	}
	if len(empty) > 0 {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM rollup_hours WHERE hour_ns = ?`+monitorClause("sid", empty)), hourNs); err != nil {
			return fmt.Errorf("store: delete hours: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit hours: %w", err)
	}
	return nil
}

// hourTable names the columns of an hour's upsert (inserter: hourConflict).
const hourTable = "rollup_hours (sid, hour_ns, minutes, sent, lost, late, sum_ns, sum_sq_ns, min_ns, max_ns, data)"

// hourConflict replaces an hour merged before: its minutes changed.
const hourConflict = ` ON CONFLICT (sid, hour_ns) DO UPDATE SET minutes = excluded.minutes, sent = excluded.sent, lost = excluded.lost,
	late = excluded.late, sum_ns = excluded.sum_ns, sum_sq_ns = excluded.sum_sq_ns, min_ns = excluded.min_ns, max_ns = excluded.max_ns, data = excluded.data`
