package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
)

// Probe row flags.
const (
	flagLost = 1 << iota
	flagLate
)

// chunkRows is how many rows one INSERT carries at most: few statements
// per batch, well under both engines' bound on parameters. A power of two:
// flush splits a table's rows into chunks of powers of two (100 rows: 64,
// 32 and 4), so each table has at most 7 statement shapes. With one shape
// per row count, as before, every new batch size a day of probing brings
// prepared one more statement, each held on its connections by SQLite
// (about 0.45 MB of memory outside the Go heap for 100 probe rows), up to
// maxStmts: the monitor daemon's memory grew for as long as new sizes came
// (docs/monitor.md, "Memory").
const chunkRows = 64

// CheckMonitorName checks a monitor's name as the store will: 1 to
// MaxNameLen printable UTF-8 bytes.
func CheckMonitorName(name string) error { return checkName("monitor name", name) }

func checkName(what, s string) error {
	if s == "" || len(s) > MaxNameLen || !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: %s %.40q: want 1–%d printable UTF-8 bytes", ErrBadInput, what, s, MaxNameLen)
	}
	return nil
}

func (s *sqlStore) Monitor(ctx context.Context, id Identity) (int64, error) {
	if err := checkIdentity(id); err != nil {
		return 0, err
	}
	labels, err := json.Marshal(id.Labels)
	if err != nil {
		return 0, fmt.Errorf("store: encode labels: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO monitors (name, labels, created_ns) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET labels = excluded.labels`), id.Name, string(labels), time.Now().UnixNano()); err != nil {
		return 0, fmt.Errorf("store: register monitor %q: %w", id.Name, err)
	}
	var mid int64
	if err := s.db.QueryRowContext(ctx, s.q(`SELECT id FROM monitors WHERE name = ?`), id.Name).Scan(&mid); err != nil {
		return 0, fmt.Errorf("store: monitor %q: %w", id.Name, err)
	}
	return mid, nil
}

// checkStreams bounds a monitor's streams (every backend).
func checkStreams(streams []model.MonitorStream) error {
	if len(streams) > MaxStreams {
		return fmt.Errorf("%w: %d streams, the limit is %d", ErrBadInput, len(streams), MaxStreams)
	}
	for _, st := range streams {
		if err := checkName("stream name", st.Name); err != nil {
			return err
		}
		if err := checkName("stream target", st.Target); err != nil {
			return err
		}
		if err := checkName("stream kind", string(st.Kind)); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) Streams(ctx context.Context, monitor int64, streams []model.MonitorStream) ([]int32, error) {
	if err := checkStreams(streams); err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	ids := make([]int32, len(streams))
	for i, st := range streams {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO streams (monitor_id, name, target, kind, dscp) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (monitor_id, name) DO UPDATE SET target = excluded.target, kind = excluded.kind, dscp = excluded.dscp`),
			monitor, st.Name, st.Target, string(st.Kind), st.DSCP); err != nil {
			return nil, fmt.Errorf("store: register stream %q: %w", st.Name, err)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, s.q(`SELECT id FROM streams WHERE monitor_id = ? AND name = ?`), monitor, st.Name).Scan(&id); err != nil {
			return nil, fmt.Errorf("store: stream %q: %w", st.Name, err)
		}
		ids[i] = int32(id)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store: commit streams: %w", err)
	}
	s.mu.Lock()
	s.sids[monitor] = ids
	s.mu.Unlock()
	return append([]int32(nil), ids...), nil
}

func (s *sqlStore) ListStreams(ctx context.Context, monitor int64) (map[int32]model.MonitorStream, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, name, target, kind, dscp FROM streams WHERE monitor_id = ? ORDER BY id LIMIT ?`), monitor, MaxListLimit)
	if err != nil {
		return nil, fmt.Errorf("store: list streams: %w", err)
	}
	defer rows.Close()
	out := map[int32]model.MonitorStream{}
	for rows.Next() {
		var (
			id   int64
			st   model.MonitorStream
			kind string
		)
		if err := rows.Scan(&id, &st.Name, &st.Target, &kind, &st.DSCP); err != nil {
			return nil, fmt.Errorf("store: list streams: %w", err)
		}
		st.Kind = model.ProbeKind(kind)
		out[int32(id)] = st
	}
	return out, rows.Err()
}

// checkBatch bounds a batch before anything of it is written.
func checkBatch(b *Batch) error {
	if n := b.Rows(); n > MaxBatchRows {
		return fmt.Errorf("%w: a batch of %d rows, the limit is %d", ErrBadInput, n, MaxBatchRows)
	}
	for _, e := range b.Events {
		if len(e.Text) > MaxEventText || len(e.Detail) > MaxEventDetail || len(e.Flags) > MaxEventDetail {
			return fmt.Errorf("%w: %s event over the bounds (text %d bytes, %d figures, %d flags)", ErrBadInput, e.Kind, len(e.Text), len(e.Detail), len(e.Flags))
		}
		if err := checkName("event kind", string(e.Kind)); err != nil {
			return err
		}
	}
	// A rollup's data is decoded once here (about a microsecond): a
	// damaged row from one monitor stored in a fleet store would make
	// every report and aggregate over it fail.
	var d RollupData
	for _, r := range b.Rollups {
		if len(r.Data) > MaxRollupData {
			return fmt.Errorf("%w: rollup data of %d bytes, the limit is %d", ErrBadInput, len(r.Data), MaxRollupData)
		}
		if err := d.UnmarshalBinary(r.Data); err != nil {
			return fmt.Errorf("%w: rollup of minute %d: %v", ErrBadInput, r.MinuteNs, err)
		}
	}
	return nil
}

func (s *sqlStore) Write(ctx context.Context, monitor int64, b *Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	s.mu.Lock()
	sids := s.sids[monitor]
	s.mu.Unlock()
	return s.writeBatch(ctx, monitor, sids, b, nil)
}

// writeBatch writes b's rows (stream fields indexing sids) in one
// transaction, after creating the day partitions they need; extra, if
// not nil, runs in the same transaction. A partition another process
// dropped meanwhile (retention) makes the insert fail once: the cache of
// partitions is cleared and the batch tried again.
func (s *sqlStore) writeBatch(ctx context.Context, monitor int64, sids []int32, b *Batch, extra func(*sql.Tx) error) error {
	days, err := batchDays(b)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if err := s.ensurePartitions(ctx, days); err != nil {
			return err
		}
		err := s.writeTx(ctx, monitor, sids, b, extra)
		if err == nil || attempt > 0 || !noPartition(err) {
			return err
		}
		s.mu.Lock()
		clear(s.parts)
		s.mu.Unlock()
	}
}

func (s *sqlStore) writeTx(ctx context.Context, monitor int64, sids []int32, b *Batch, extra func(*sql.Tx) error) error {
	sid := func(i int32) (int64, error) {
		if i < 0 || int(i) >= len(sids) {
			return 0, fmt.Errorf("%w %d (monitor %d has %d streams registered)", ErrUnknownStream, i, monitor, len(sids))
		}
		return int64(sids[i]), nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin batch: %w", err)
	}
	defer tx.Rollback()

	ins := inserter{s: s, tx: tx, ctx: ctx}
	for _, p := range lateWins(b.Probes) {
		id, err := sid(p.Stream)
		if err != nil {
			return err
		}
		var fl int
		if p.Lost {
			fl |= flagLost
		}
		if p.Late {
			fl |= flagLate
		}
		ins.add(probeTable, 9,
			id, p.SentNs, int64(p.Seq), p.LatenessNs, p.RTTNs, p.FwdNs, p.RevNs, fl, int(p.Load))
	}
	ins.flush()
	for _, c := range b.Counters {
		ins.add("counters (monitor_id, time_ns, rx_bytes, tx_bytes)", 4, monitor, c.TimeNs, int64(c.RxBytes), int64(c.TxBytes))
	}
	ins.flush()
	for _, r := range b.Rollups {
		id, err := sid(r.Stream)
		if err != nil {
			return err
		}
		data := r.Data
		if data == nil {
			data = []byte{}
		}
		ins.add("rollups (sid, minute_ns, sent, lost, late, sum_ns, sum_sq_ns, min_ns, max_ns, data)", 10,
			id, r.MinuteNs, int64(r.Sent), int64(r.Lost), int64(r.Late), r.SumNs, r.SumSqNs, r.MinNs, r.MaxNs, data)
	}
	ins.flush()
	markHours(&ins, b.Rollups, sids) // the fleet's hourly aggregate (fleetquery.go reads it)
	if ins.err != nil {
		return ins.err
	}
	for _, e := range b.Events {
		stream := int64(-1)
		if e.Stream >= 0 {
			if stream, err = sid(e.Stream); err != nil {
				return err
			}
		}
		detail, err := json.Marshal(e.Detail)
		if err != nil {
			return fmt.Errorf("store: encode event detail: %w", err)
		}
		flags, _ := json.Marshal(e.Flags)
		// The natural key (monitor, kind, stream, start, end): an event
		// already stored is left as it is.
		if _, err := s.stmts.exec(ctx, s.db, tx, s.q(`INSERT INTO events (monitor_id, kind, start_ns, end_ns, stream_id, text, detail, flags)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), monitor, string(e.Kind), e.StartNs, e.EndNs, stream, e.Text, string(detail), string(flags)); err != nil {
			return fmt.Errorf("store: insert event: %w", err)
		}
	}
	if extra != nil {
		if err := extra(tx); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit batch of %d rows: %w", b.Rows(), err)
	}
	s.stmts.prepare(ctx, s.db)
	return nil
}

// probeTable names the probe columns an insert fills.
const probeTable = "probes (sid, sent_ns, seq, lateness_ns, rtt_ns, fwd_ns, rev_ns, flags, load)"

// probeConflict: a probe row already stored stays as it is (a replayed
// batch is harmless), except that a late reply replaces the lost row of
// the same probe: the prober reports a probe lost at its timeout and,
// when the reply comes later, again as late with its RTT, and the two
// may land in different batches. Same SQL on both engines; 1 is flagLost,
// 3 flagLost|flagLate.
const probeConflict = ` ON CONFLICT (sid, sent_ns) DO UPDATE SET rtt_ns = excluded.rtt_ns, fwd_ns = excluded.fwd_ns,
	rev_ns = excluded.rev_ns, flags = excluded.flags WHERE probes.flags = 1 AND excluded.flags = 3`

// lateWins drops, within one batch, the lost sample of a probe whose late
// sample is in the same batch (PostgreSQL refuses an upsert that touches a
// row twice). Batches without a late sample, nearly all, are not copied.
func lateWins(ps []model.ProbeSample) []model.ProbeSample {
	late := map[[2]int64]bool{}
	for _, p := range ps {
		if p.Late {
			late[[2]int64{int64(p.Stream), p.SentNs}] = true
		}
	}
	if len(late) == 0 {
		return ps
	}
	out := make([]model.ProbeSample, 0, len(ps))
	for _, p := range ps {
		if !p.Late && late[[2]int64{int64(p.Stream), p.SentNs}] {
			continue
		}
		out = append(out, p)
	}
	return out
}

// inserter collects rows of one table into multi-row INSERTs that skip
// rows already stored (ON CONFLICT DO NOTHING: both engines).
type inserter struct {
	s     *sqlStore
	tx    *sql.Tx
	ctx   context.Context
	table string
	cols  int
	args  []any
	err   error
}

func (in *inserter) add(table string, cols int, vals ...any) {
	if in.table != table {
		in.flush()
		in.table, in.cols = table, cols
	}
	in.args = append(in.args, vals...)
	if len(in.args) >= chunkRows*cols {
		in.flush()
	}
}

func (in *inserter) flush() {
	if len(in.args) == 0 || in.err != nil {
		in.args = in.args[:0]
		return
	}
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", in.cols), ", ") + ")"
	conflict := " ON CONFLICT DO NOTHING"
	switch in.table {
	case probeTable:
		conflict = probeConflict
	case hourTable:
		conflict = hourConflict // the fleet's hourly aggregate (fleet.go)
	}
	for args := in.args; len(args) > 0; {
		// The largest power of two of rows left (chunkRows at most).
		n := 1 << (bits.Len(uint(min(len(args)/in.cols, chunkRows))) - 1)
		q := "INSERT INTO " + in.table + " VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", n), ", ") + conflict
		if _, err := in.s.stmts.exec(in.ctx, in.s.db, in.tx, in.s.q(q), args[:n*in.cols]...); err != nil {
			in.err = fmt.Errorf("store: insert into %s: %w", strings.Fields(in.table)[0], err)
			break
		}
		args = args[n*in.cols:]
	}
	in.args = in.args[:0]
}

func (s *sqlStore) Probes(ctx context.Context, monitor int64, from, to int64, fn func(model.ProbeSample) error) error {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT p.sid, p.sent_ns, p.seq, p.lateness_ns, p.rtt_ns, p.fwd_ns, p.rev_ns, p.flags, p.load
		FROM probes p JOIN streams s ON p.sid = s.id
		WHERE s.monitor_id = ? AND p.sent_ns >= ? AND p.sent_ns < ? ORDER BY p.sid, p.sent_ns`), monitor, from, to)
	if err != nil {
		return fmt.Errorf("store: read probes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			p              model.ProbeSample
			sid, seq, late int64
			flags, load    int
		)
		if err := rows.Scan(&sid, &p.SentNs, &seq, &late, &p.RTTNs, &p.FwdNs, &p.RevNs, &flags, &load); err != nil {
			return fmt.Errorf("store: read probes: %w", err)
		}
		p.Stream, p.Seq, p.LatenessNs = int32(sid), uint32(seq), late
		p.Lost, p.Late, p.Load = flags&flagLost != 0, flags&flagLate != 0, model.LoadState(load)
		if err := fn(p); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqlStore) Counters(ctx context.Context, monitor int64, from, to int64, fn func(model.CounterSample) error) error {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT time_ns, rx_bytes, tx_bytes FROM counters
		WHERE monitor_id = ? AND time_ns >= ? AND time_ns < ? ORDER BY time_ns`), monitor, from, to)
	if err != nil {
		return fmt.Errorf("store: read counters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			c      model.CounterSample
			rx, tx int64
		)
		if err := rows.Scan(&c.TimeNs, &rx, &tx); err != nil {
			return fmt.Errorf("store: read counters: %w", err)
		}
		c.RxBytes, c.TxBytes = uint64(rx), uint64(tx)
		if err := fn(c); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqlStore) Rollups(ctx context.Context, monitor int64, from, to int64, fn func(Rollup) error) error {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT `+rollupCols+`
		FROM rollups r JOIN streams s ON r.sid = s.id
		WHERE s.monitor_id = ? AND r.minute_ns >= ? AND r.minute_ns < ? ORDER BY r.sid, r.minute_ns`), monitor, from, to)
	if err != nil {
		return fmt.Errorf("store: read rollups: %w", err)
	}
	return scanRollups(rows, fn)
}

func (s *sqlStore) Events(ctx context.Context, monitor int64, from, to int64, limit int) ([]model.MonitorEvent, error) {
	limit = min(max(limit, 0), MaxListLimit)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT kind, start_ns, end_ns, stream_id, text, detail, flags FROM events
		WHERE monitor_id = ? AND start_ns < ? AND end_ns >= ? ORDER BY start_ns, id LIMIT ?`), monitor, to, from, limit)
	if err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	defer rows.Close()
	out := []model.MonitorEvent{}
	for rows.Next() {
		var e model.MonitorEvent
		if err := scanEvent(rows, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// scanEvent reads an events row into e: the columns kind, start_ns,
// end_ns, stream_id, text, detail, flags, after the columns of pre.
func scanEvent(rows *sql.Rows, e *model.MonitorEvent, pre ...any) error {
	var (
		kind          string
		stream        int64
		detail, flags string
	)
	if err := rows.Scan(append(pre, &kind, &e.StartNs, &e.EndNs, &stream, &e.Text, &detail, &flags)...); err != nil {
		return fmt.Errorf("store: read events: %w", err)
	}
	e.Kind, e.Stream = model.EventKind(kind), int32(stream)
	if err := json.Unmarshal([]byte(detail), &e.Detail); err != nil {
		return fmt.Errorf("store: event detail: %w", err)
	}
	if err := json.Unmarshal([]byte(flags), &e.Flags); err != nil {
		return fmt.Errorf("store: event flags: %w", err)
	}
	return nil
}

func (s *sqlStore) Restart(ctx context.Context, monitor int64, r RestartRow) error {
	if len(r.Version) > MaxNameLen {
		return fmt.Errorf("%w: version of %d bytes", ErrBadInput, len(r.Version))
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO restarts (monitor_id, time_ns, last_ns, version) VALUES (?, ?, ?, ?)
		ON CONFLICT DO NOTHING`), monitor, r.TimeNs, r.LastNs, r.Version); err != nil {
		return fmt.Errorf("store: record restart: %w", err)
	}
	return nil
}

func (s *sqlStore) Restarts(ctx context.Context, monitor int64, from, to int64) ([]RestartRow, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT time_ns, last_ns, version FROM restarts
		WHERE monitor_id = ? AND time_ns >= ? AND time_ns < ? ORDER BY time_ns LIMIT ?`), monitor, from, to, MaxListLimit)
	if err != nil {
		return nil, fmt.Errorf("store: read restarts: %w", err)
	}
	defer rows.Close()
	out := []RestartRow{}
	for rows.Next() {
		var r RestartRow
		if err := rows.Scan(&r.TimeNs, &r.LastNs, &r.Version); err != nil {
			return nil, fmt.Errorf("store: read restarts: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqlStore) LastSample(ctx context.Context, monitor int64) (int64, bool, error) {
	return s.sampleEdge(ctx, monitor, "MAX", "last")
}

func (s *sqlStore) FirstSample(ctx context.Context, monitor int64) (int64, bool, error) {
	return s.sampleEdge(ctx, monitor, "MIN", "first")
}

// sampleEdge is the newest (agg MAX) or oldest (MIN) send time of the
// monitor's probes. Per stream, that row is an end of its primary key:
// one seek each.
func (s *sqlStore) sampleEdge(ctx context.Context, monitor int64, agg, what string) (int64, bool, error) {
	var ns sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q(`SELECT `+agg+`((SELECT `+agg+`(sent_ns) FROM probes WHERE sid = s.id))
		FROM streams s WHERE s.monitor_id = ?`), monitor).Scan(&ns)
	if err != nil {
		return 0, false, fmt.Errorf("store: %s sample: %w", what, err)
	}
	return ns.Int64, ns.Valid, nil
}

func (s *sqlStore) ListMonitors(ctx context.Context) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, name FROM monitors ORDER BY id LIMIT ?`), MaxListLimit)
	if err != nil {
		return nil, fmt.Errorf("store: list monitors: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var (
			id   int64
			name string
		)
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("store: list monitors: %w", err)
		}
		out[name] = id
	}
	return out, rows.Err()
}

// maxStmts bounds the prepared statements a store keeps. A multi-row
// INSERT's text depends on its row count, which at a steady probe rate
// takes a handful of values per table; past the bound a statement runs
// unprepared, which is only slower.
const maxStmts = 128

// stmtCache keeps the write path's statements prepared: preparing one
// on every batch cost the daemon more CPU than running it (SQLite
// compiles each to bytecode). Statements are prepared on the pool and
// bound to each batch's transaction; database/sql reuses a connection's
// own preparation. A statement is prepared after the transaction that
// first ran it (unprepared) has ended, on the connection it freed:
// prepared during the transaction, it took a second connection that
// the daemon kept open for nothing but its copy of every statement, of
// the schema and of a page cache (0.9 MB of SQLite's memory at 8 × 10/s,
// TestStmtCacheOneConnection).
type stmtCache struct {
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	pending []string // run unprepared in a transaction, prepared after it
	closed  bool
}

// exec runs query with args inside tx, through a statement prepared
// once per store.
func (c *stmtCache) exec(ctx context.Context, db *sql.DB, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if db.Stats().MaxOpenConnections == 1 {
		// An in-memory store's one connection is tx's: preparing on the
		// pool would wait for it until ctx ends.
		return tx.ExecContext(ctx, query, args...)
	}
	c.mu.Lock()
	st, ok := c.m[query]
	if !ok && !c.closed && len(c.m)+len(c.pending) < maxStmts && !slices.Contains(c.pending, query) {
		c.pending = append(c.pending, query)
	}
	c.mu.Unlock()
	if !ok {
		return tx.ExecContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// prepare prepares the statements exec ran unprepared, once their
// transaction has given its connection back. A statement that fails to
// prepare is left out: it runs unprepared again, and is tried again.
func (c *stmtCache) prepare(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.pending {
		if c.closed {
			break
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		if c.m == nil {
			c.m = map[string]*sql.Stmt{}
		}
		c.m[q] = st
	}
	c.pending = c.pending[:0]
}

// close closes every statement; later writes run unprepared.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		_ = st.Close()
	}
	c.m, c.pending, c.closed = nil, nil, true
}

// markHours marks the hours of a batch's rollups dirty, in the batch's
// transaction, so the hourly aggregate is redone for them.
func markHours(ins *inserter, rollups []Rollup, sids []int32) {
	seen := map[StreamHour]bool{}
	for _, r := range rollups {
		if r.Stream < 0 || int(r.Stream) >= len(sids) {
			continue // Write has refused the batch already
		}
		h := StreamHour{sids[r.Stream], floorHour(r.MinuteNs)}
		if seen[h] {
			continue
		}
		seen[h] = true
		ins.add("rollup_hours_dirty (sid, hour_ns)", 2, int64(h.Stream), h.HourNs)
	}
	ins.flush()
}

// OrderStreams lists a monitor's streams (ListStreams) by store ID and
// gives the index of each store ID in that list: the order in which the
// analysis indexes streams and shipped rows name them.
func OrderStreams(byID map[int32]model.MonitorStream) ([]model.MonitorStream, map[int32]int32) {
	ids := make([]int32, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	list := make([]model.MonitorStream, len(ids))
	index := make(map[int32]int32, len(ids))
	for i, id := range ids {
		list[i], index[id] = byID[id], int32(i)
	}
	return list, index
}
