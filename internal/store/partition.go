package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/units"
)

// Day partitions (PostgreSQL only; migration 3): probes, counters, rollups
// and events are partitioned by range of UTC day of their time column, one
// partition per day named TABLE_dN, N the days since 1970-01-01. A write
// creates the partitions its rows need (once per store and day: cached),
// `sonde store migrate` the coming days ahead, and retention drops the
// days wholly older than its cut.

// dayNs is one partition's span.
const dayNs = int64(24 * time.Hour)

// MaxBatchDays bounds the distinct days of one table's rows in a batch:
// each may create a partition on PostgreSQL. A monitor's batch spans a
// second, a shipper's a window well under it.
const MaxBatchDays = 64

// AheadDays is how many days ahead `sonde store migrate` creates
// partitions.
const AheadDays = 7

// partitioned are the partitioned tables and their time columns.
var partitioned = []struct{ table, col string }{
	{"probes", "sent_ns"}, {"counters", "time_ns"}, {"rollups", "minute_ns"}, {"events", "start_ns"},
}

// maxKnownDays bounds the cache of partitions known to exist.
const maxKnownDays = 4096

// day is the day number of ns (floor division: days before 1970 are
// negative).
func day(ns int64) int64 { return units.FloorDiv(ns, dayNs) }

// batchDays returns the distinct days of each partitioned table's rows in
// b, refusing more than MaxBatchDays per table.
func batchDays(b *Batch) (map[string][]int64, error) {
	out := map[string][]int64{}
	add := func(table string, set map[int64]bool, ns int64) error {
		d := day(ns)
		if set[d] {
			return nil
		}
		if len(set) >= MaxBatchDays {
			return fmt.Errorf("%w: %s rows of a batch span more than %d days", ErrBadInput, table, MaxBatchDays)
		}
		set[d] = true
		out[table] = append(out[table], d)
		return nil
	}
	sets := map[string]map[int64]bool{"probes": {}, "counters": {}, "rollups": {}, "events": {}}
	for _, p := range b.Probes {
		if err := add("probes", sets["probes"], p.SentNs); err != nil {
			return nil, err
		}
	}
	for _, c := range b.Counters {
		if err := add("counters", sets["counters"], c.TimeNs); err != nil {
			return nil, err
		}
	}
	for _, r := range b.Rollups {
		if err := add("rollups", sets["rollups"], r.MinuteNs); err != nil {
			return nil, err
		}
	}
	for _, e := range b.Events {
		if err := add("events", sets["events"], e.StartNs); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// partitionName is the partition of table for day d.
func partitionName(table string, d int64) string {
	return table + "_d" + strconv.FormatInt(d, 10)
}

// ensurePartitions creates the partitions of the given days that the
// store has not seen yet (PostgreSQL; nothing on SQLite). Writers that
// start together take turns on an advisory lock, so two never race to
// create the same partition.
func (s *sqlStore) ensurePartitions(ctx context.Context, days map[string][]int64) error {
	if !havePostgres || s.loc.Backend != Postgres {
		return nil
	}
	var need [][2]string
	s.mu.Lock()
	for table, ds := range days {
		for _, d := range ds {
			name := partitionName(table, d)
			if !s.parts[name] {
				need = append(need, [2]string{table, strconv.FormatInt(d, 10)})
			}
		}
	}
	s.mu.Unlock()
	if len(need) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: partitions: %w", err)
	}
	defer tx.Rollback()
	// 495790744677 is "sonde" in ASCII (0x736f6e6465): any constant
	// shared by every writer.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(495790744677)`); err != nil {
		return fmt.Errorf("store: partition lock: %w", err)
	}
	for _, n := range need {
		d, _ := strconv.ParseInt(n[1], 10, 64)
		q := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM (%d) TO (%d)`,
			quoteIdent(partitionName(n[0], d)), n[0], d*dayNs, (d+1)*dayNs)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("store: create partition %s: %s", partitionName(n[0], d), oneLine(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: partitions: %w", err)
	}
	s.mu.Lock()
	if len(s.parts)+len(need) > maxKnownDays {
		clear(s.parts)
	}
	for _, n := range need {
		d, _ := strconv.ParseInt(n[1], 10, 64)
		s.parts[partitionName(n[0], d)] = true
	}
	s.mu.Unlock()
	return nil
}

// ensureAhead creates every partitioned table's partitions from yesterday
// to AheadDays after nowNs.
func (s *sqlStore) ensureAhead(ctx context.Context, nowNs int64) error {
	days := map[string][]int64{}
	for _, p := range partitioned {
		for d := day(nowNs) - 1; d <= day(nowNs)+AheadDays; d++ {
			days[p.table] = append(days[p.table], d)
		}
	}
	return s.ensurePartitions(ctx, days)
}

// quoteIdent quotes a PostgreSQL identifier (a day before 1970 gives a
// name with a minus sign).
func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// dropOldPartitions drops table's partitions whose day ends at or before
// cut, and returns the rows they held (PostgreSQL; nothing on SQLite).
func (s *sqlStore) dropOldPartitions(ctx context.Context, table string, cut int64) (int64, error) {
	if !havePostgres || s.loc.Backend != Postgres {
		return 0, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = $1 AND p.relnamespace = to_regnamespace(current_schema())::oid`, table)
	if err != nil {
		return 0, fmt.Errorf("store: retention: list partitions of %s: %w", table, err)
	}
	var old []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, fmt.Errorf("store: retention: %w", err)
		}
		d, err := strconv.ParseInt(strings.TrimPrefix(name, table+"_d"), 10, 64)
		if err != nil || !strings.HasPrefix(name, table+"_d") {
			continue // not one of ours
		}
		if (d+1)*dayNs <= cut {
			old = append(old, name)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("store: retention: %w", err)
	}
	var total int64
	for _, name := range old {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+quoteIdent(name)).Scan(&n); err != nil {
			return total, fmt.Errorf("store: retention: count %s: %w", name, err)
		}
		if _, err := s.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+quoteIdent(name)); err != nil {
			return total, fmt.Errorf("store: retention: drop %s: %w", name, err)
		}
		total += n
		s.mu.Lock()
		delete(s.parts, name)
		s.mu.Unlock()
	}
	return total, nil
}
