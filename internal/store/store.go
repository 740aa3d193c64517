// Package store keeps everything sonde stores, in one schema behind one
// interface, on SQLite (the embedded default, pure Go: modernc.org/sqlite,
// or github.com/ncruces/go-sqlite3 on mips and with tag sqlite_ncruces;
// sqlite_modernc.go) or PostgreSQL (pgx; the fleet's shared store): the results of past tests
// the page and the CLI list (kept to the last N within a byte budget), and
// a monitor's rows (probe samples, interface counters, events, per-minute
// rollups, restarts, the link capacities it used) under the monitor's
// identity. The schema is one set
// of versioned migrations (goose's format, run by migrate.go; embedded SQL written once and
// expanded per dialect), applied when a store opens; a database from a
// newer schema is refused. docs/store.md describes the schema and limits.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// Results is the history of test results: the page's assembled results
// and the server's own records of the tests it served, each of a kind
// (model.ResultKinds) that keeps its own last Limits.Keep.
type Results interface {
	// AddResult stores res (replacing one of the same ID) and forgets the
	// oldest results beyond the store's Limits.
	AddResult(ctx context.Context, res *model.Result) error
	// AddRecord stores a server's own record of a test under its kind
	// (any but model.KindPage), within the same Limits.
	AddRecord(ctx context.Context, rec *model.ServerRecord) error
	// ListResults returns up to limit summaries of every kind, newest
	// first; ListResultsKind those of one kind ("": every kind).
	ListResults(ctx context.Context, limit int) ([]Summary, error)
	ListResultsKind(ctx context.Context, kind string, limit int) ([]Summary, error)
	// GetResult returns a stored result's JSON.
	GetResult(ctx context.Context, id string) (json.RawMessage, error)
	// ResultUsage returns the results stored and the bytes of their JSON.
	ResultUsage(ctx context.Context) (rows int, bytes int64, err error)
}

// Monitors holds monitors' rows. Every writer call is one transaction.
type Monitors interface {
	// Monitor returns the ID of the monitor named id.Name, registering it
	// (with its labels) when new; the labels of a known one are updated.
	Monitor(ctx context.Context, id Identity) (int64, error)
	// Streams registers a monitor's streams (by name; known ones keep
	// their ID) and returns their store IDs in the order given. Rows
	// written later carry the index into this list as their stream.
	Streams(ctx context.Context, monitor int64, streams []model.MonitorStream) ([]int32, error)
	// ListStreams returns a monitor's streams by store ID.
	ListStreams(ctx context.Context, monitor int64) (map[int32]model.MonitorStream, error)
	// Write stores a batch in one transaction; a row already stored (same
	// stream and time) is left as it is, so a replayed batch is harmless,
	// except a lost probe, which a late sample of it (Lost and Late, with
	// its RTT) replaces.
	Write(ctx context.Context, monitor int64, b *Batch) error
	// Probes calls fn for the monitor's probes sent in [from, to), by
	// stream then time; Stream is the store's stream ID.
	Probes(ctx context.Context, monitor int64, from, to int64, fn func(model.ProbeSample) error) error
	// Counters calls fn for the monitor's counter samples in [from, to).
	Counters(ctx context.Context, monitor int64, from, to int64, fn func(model.CounterSample) error) error
	// Rollups calls fn for the monitor's rollups of minutes in [from, to).
	Rollups(ctx context.Context, monitor int64, from, to int64, fn func(Rollup) error) error
	// Events returns up to limit events that overlap [from, to), oldest first.
	Events(ctx context.Context, monitor int64, from, to int64, limit int) ([]model.MonitorEvent, error)
	// Restart records a start of the monitor; Restarts lists them.
	Restart(ctx context.Context, monitor int64, r RestartRow) error
	Restarts(ctx context.Context, monitor int64, from, to int64) ([]RestartRow, error)
	// LastSample is the send time of the monitor's newest probe (ok false: none).
	LastSample(ctx context.Context, monitor int64) (ns int64, ok bool, err error)
	// FirstSample is the send time of the monitor's oldest probe still
	// stored (ok false: none): where retention left raw samples, so a
	// report reads rollups before it and raw samples after.
	FirstSample(ctx context.Context, monitor int64) (ns int64, ok bool, err error)
	// SetCapacity records the link capacities the monitor uses from
	// r.FromNs on (at a start, and when they change); Capacities returns
	// the rows in effect over [from, to), oldest first: the newest one
	// starting at or before from, then those starting in range.
	SetCapacity(ctx context.Context, monitor int64, r CapacityRow) error
	Capacities(ctx context.Context, monitor int64, from, to int64) ([]CapacityRow, error)
	// ListMonitors returns the monitors' IDs by name, without registering
	// any (a report must not write).
	ListMonitors(ctx context.Context) (map[string]int64, error)
	// Retain deletes what is older than the retention allows, in batches.
	Retain(ctx context.Context, r Retention, nowNs int64) (Deleted, error)
}

// Store is an open store: SQLite or PostgreSQL behind the same calls.
type Store interface {
	Results
	Monitors
	Fleet    // a shared store's monitors and shipped batches (fleet.go)
	Shipping // a monitor's side of shipping (shipsrc.go)
	// FleetReader is the fleet report's reads and its hourly aggregate
	// (fleetquery.go).
	FleetReader
	// Location is where the store is (without a password).
	Location() Location
	Close() error
}

// Identity names a monitor: its name is unique in a store; labels (ISP,
// access type, region …) group monitors in fleet reports.
type Identity struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Rollup is one stream's minute as stored: the figures any query sums,
// and Data, the analysis package's encoding of the rest (histogram bins,
// counts within each threshold per load state), which the store keeps
// opaque so the analysis may change its bins without a migration.
type Rollup struct {
	Stream   int32   `json:"stream"` // index on Write; store stream ID when read
	MinuteNs int64   `json:"minute_ns"`
	Sent     uint32  `json:"sent"`
	Lost     uint32  `json:"lost"`
	Late     uint32  `json:"late"`
	SumNs    float64 `json:"sum_ns"`
	SumSqNs  float64 `json:"sum_sq_ns"`
	MinNs    int64   `json:"min_ns"`
	MaxNs    int64   `json:"max_ns"`
	Data     []byte  `json:"data"`
}

// RestartRow is one start of a monitor.
type RestartRow struct {
	TimeNs  int64  `json:"time_ns"`
	LastNs  int64  `json:"last_ns"` // newest sample stored before it; 0: none
	Version string `json:"version"` // sonde's version
}

// Batch is what a monitor writes at once (about a second of rows). Stream
// fields are indexes into the list given to Streams.
type Batch struct {
	Probes   []model.ProbeSample
	Counters []model.CounterSample
	Rollups  []Rollup
	Events   []model.MonitorEvent
}

// Rows is the number of rows in the batch.
func (b *Batch) Rows() int {
	return len(b.Probes) + len(b.Counters) + len(b.Rollups) + len(b.Events)
}

// Bounds on what a writer (a monitor, later a remote one) may hand the
// store: each allocates and lands on disk.
const (
	MaxBatchRows   = 100_000 // rows in one Write (a second of 8 targets × 100/s is 800)
	MaxStreams     = 1024    // streams of one monitor
	MaxNameLen     = 256     // monitor and stream names, targets
	MaxLabels      = 32      // labels of one monitor
	MaxLabelLen    = 256     // one label key or value
	MaxEventText   = 4096    // an event's text
	MaxEventDetail = 64      // detail figures and flags of one event
	MaxRollupData  = 64 << 10
	MaxListLimit   = 100_000 // rows one Events or ListResults call returns
)

// ErrUnknownStream is returned by Write for a stream index not registered.
var ErrUnknownStream = errors.New("store: unknown stream index")

// ErrBadInput is returned for rows or identities over the bounds above.
var ErrBadInput = errors.New("store: bad input")

// Options tune Open; zero fields take defaults.
type Options struct {
	Results Limits
	// CacheKiB is SQLite's page cache per connection, in KiB (0: SQLite's
	// default, 2000). It is memory outside the Go heap, held for as long
	// as the connection lives; a writer whose inserts touch only the
	// right edge of its b-trees (the monitor daemon) needs a few pages
	// per tree, a report scanning months wants the default. Ignored by
	// PostgreSQL.
	CacheKiB int
}

// MaxCacheKiB bounds Options.CacheKiB (1 GiB).
const MaxCacheKiB = 1 << 20

// Open opens the store at rawURL (see ParseURL), creating a SQLite file
// if needed (its directory must exist), and migrates its schema.
func Open(ctx context.Context, rawURL string, opt Options) (Store, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return OpenLocation(ctx, loc, opt)
}

// OpenExisting opens a store that must already exist: opening a missing
// SQLite file would create and migrate an empty one, and a reader (a
// report, a replay, a view) must find the store, not make one.
func OpenExisting(ctx context.Context, loc Location) (Store, error) {
	if loc.Backend == SQLite && loc.Path != Memory {
		if _, err := os.Stat(loc.Path); err != nil {
			return nil, fmt.Errorf("store %s: %w", loc, errors.Unwrap(err))
		}
	}
	if loc.Backend == Journal {
		// Read only: a report beside the running daemon repairs nothing.
		return openJournal(loc, true)
	}
	return OpenLocation(ctx, loc, Options{})
}

// OpenLocation opens a parsed location; see Open.
func OpenLocation(ctx context.Context, loc Location, opt Options) (Store, error) {
	if opt.CacheKiB < 0 || opt.CacheKiB > MaxCacheKiB {
		return nil, fmt.Errorf("store: page cache of %d KiB: want 0 (the default) to %d", opt.CacheKiB, MaxCacheKiB)
	}
	if loc.Backend == Journal {
		return openJournal(loc, false)
	}
	db, err := openDB(loc, opt.CacheKiB)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %s", loc, oneLine(err))
	}
	if _, err := migrate(ctx, db, loc.Backend); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return newSQLStore(db, loc, opt), nil
}

// Migrate applies the migrations to the store at rawURL and returns the
// schema version it is at.
func Migrate(ctx context.Context, rawURL string) (int64, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return 0, err
	}
	if loc.Backend == Journal {
		return 0, fmt.Errorf("store: %s: a journal has no schema to migrate", loc)
	}
	db, err := openDB(loc, 0)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	v, err := migrate(ctx, db, loc.Backend)
	if err != nil {
		return v, fmt.Errorf("%s: %w", loc, err)
	}
	// PostgreSQL: the coming days' partitions, so writes at midnight do
	// not wait on creating them.
	if err := newSQLStore(db, loc, Options{}).ensureAhead(ctx, time.Now().UnixNano()); err != nil {
		return v, fmt.Errorf("%s: %w", loc, err)
	}
	return v, nil
}

func newSQLStore(db *sql.DB, loc Location, opt Options) *sqlStore {
	return &sqlStore{db: db, loc: loc, lim: opt.Results.withDefaults(), sids: map[int64][]int32{}, parts: map[string]bool{}, shipped: map[int64]shippedList{}}
}

// SQLite's settings on every connection to a file (see openDB).
const (
	// walCheckpointPages: a passive checkpoint once the WAL holds this
	// many pages (SQLite's default, 4 MB at 4 KiB pages), stated so that
	// journalSizeLimit below matches it.
	walCheckpointPages = 1000
	// journalSizeLimit: after a checkpoint the WAL file is cut back to
	// this. Without it the WAL keeps the largest size it ever reached (a
	// long report holds checkpoints back while the writer goes on), and
	// with it its index, the -shm file every connection maps.
	journalSizeLimit = 8 << 20
)

// sqliteDSN is the DSN of a database file (both SQLite drivers,
// sqlite_modernc.go and sqlite_ncruces.go, read these parameters).
func sqliteDSN(path string, cacheKiB int) string {
	// WAL: readers never block the writer; synchronous=NORMAL: a commit
	// survives a crash of the process (not of the machine's power, where
	// the last transactions may go, never the file); immediate
	// transactions: writers queue on busy_timeout instead of failing on a
	// lock upgrade. mmap_size 0: pages are read, never mapped, so a
	// database of gigabytes never counts in the process's RSS (SQLite's
	// default, stated because a build may change it).
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=mmap_size(0)&_pragma=wal_autocheckpoint(" + strconv.Itoa(walCheckpointPages) + ")" +
		"&_pragma=journal_size_limit(" + strconv.Itoa(journalSizeLimit) + ")"
	if cacheKiB > 0 {
		// Negative: a size in KiB, not a count of pages.
		dsn += "&_pragma=cache_size(-" + strconv.Itoa(cacheKiB) + ")"
	}
	return dsn + "&_txlock=immediate"
}

func openDB(loc Location, cacheKiB int) (*sql.DB, error) {
	switch loc.Backend {
	case Postgres:
		if !havePostgres {
			return nil, fmt.Errorf("store: %s: this build (monitor-only) has no PostgreSQL driver: keep a SQLite store and --ship to a fleet store", loc)
		}
		db, err := sql.Open("pgx", loc.DSN)
		if err != nil {
			return nil, fmt.Errorf("store: %s: %w", loc, err)
		}
		return db, nil
	case SQLite:
	default:
		return nil, fmt.Errorf("store: unknown backend %q", loc.Backend)
	}
	dsn := "file::memory:"
	if loc.Path != Memory {
		dir := filepath.Dir(loc.Path)
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("store: database directory %s: %w", dir, errors.Unwrap(err))
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("store: %s is not a directory", dir)
		}
		dsn = sqliteDSN(loc.Path, cacheKiB)
	}
	db, err := sql.Open(sqliteDriver, dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", loc, err)
	}
	if loc.Path == Memory {
		// An in-memory database exists per connection.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(4)
	}
	return db, nil
}

// sqlStore is both backends: database/sql with the dialect's few
// differences (placeholders) handled in q.
type sqlStore struct {
	db  *sql.DB
	loc Location
	lim Limits

	mu    sync.Mutex
	sids  map[int64][]int32 // monitor → stream index → store stream ID
	parts map[string]bool   // PostgreSQL day partitions known to exist (partition.go)
	// shipped: per fleet monitor, the stream list last registered (fleet.go)
	shipped map[int64]shippedList

	stmts stmtCache // the write path's prepared statements (monitor.go)
}

func (s *sqlStore) Location() Location { return s.loc }
func (s *sqlStore) Close() error {
	s.stmts.close()
	return s.db.Close()
}

// q writes a query for the backend: queries are written with ?, which
// PostgreSQL spells $1, $2 … (none of the queries has a ? in a literal).
func (s *sqlStore) q(query string) string {
	if !havePostgres || s.loc.Backend != Postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
