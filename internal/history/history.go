// Package history keeps the results of past tests a server assembled (the
// browser page's, docs/browser.md) in SQLite, so the page can list them and
// open one again. It owns the database file and its schema and bounds it on
// disk: each stored result is at most a row cap, and it keeps the last N
// results within a total byte budget, forgetting older ones.
//
// The driver is modernc.org/sqlite (pure Go): the binary stays
// self-contained and cgo-free.
package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/sonde-project/sonde/internal/model"
)

// Memory is the path that keeps the history in memory only: it lasts as
// long as the process.
const Memory = ":memory:"

// Defaults of Limits.
const (
	// DefaultKeep is how many results a store keeps.
	DefaultKeep = 1000
	// DefaultMaxRowBytes bounds one stored result's JSON. The page's result
	// endpoint reads at most 8 MiB; the server adds its own series to what
	// it assembles, and a real page result is well under 1 MiB.
	DefaultMaxRowBytes = 8 << 20
	// DefaultMaxTotalBytes bounds the stored JSON of all results together,
	// so DefaultKeep results of the largest size cannot fill a disk.
	DefaultMaxTotalBytes = 256 << 20
)

// Limits bound a store; zero fields take the defaults above.
type Limits struct {
	// Keep is how many results are kept, newest first.
	Keep int
	// MaxRowBytes bounds one result's stored JSON: a larger one is
	// refused with ErrTooLarge, never cut.
	MaxRowBytes int64
	// MaxTotalBytes bounds the stored JSON of all results: adding one
	// forgets the oldest until the rest fit. It is at least MaxRowBytes,
	// so the newest result is always kept.
	MaxTotalBytes int64
}

// ErrTooLarge is returned by Add for a result over the row cap.
var ErrTooLarge = errors.New("history: result too large to store")

// ErrNotFound is returned by Get for an ID the store does not hold.
var ErrNotFound = errors.New("history: no such result")

// ErrBadID is returned for an ID that cannot be a result's: result IDs are
// the server's session IDs, 32 lower-case hex digits.
var ErrBadID = errors.New("history: malformed result id")

var idPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ValidID reports whether id has the form of a result ID.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Summary is one row of the list of past results.
type Summary struct {
	ID          string    `json:"id"`
	Start       time.Time `json:"start"`
	Software    string    `json:"software"`
	DownloadBps float64   `json:"download_bps"`
	UploadBps   float64   `json:"upload_bps"`
	// IdleRTTMs is the baseline's minimum RTT; LoadedRTTMs the larger of
	// the two directions' median RTT under load (0: not measured).
	IdleRTTMs   float64 `json:"idle_rtt_ms"`
	LoadedRTTMs float64 `json:"loaded_rtt_ms"`
	Errors      int     `json:"errors"`
}

// Store is an open history database. Safe for concurrent use.
type Store struct {
	db  *sql.DB
	lim Limits
}

const schema = `CREATE TABLE IF NOT EXISTS results (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	id           TEXT NOT NULL UNIQUE,
	start        TEXT NOT NULL,
	software     TEXT NOT NULL,
	download_bps REAL NOT NULL,
	upload_bps   REAL NOT NULL,
	idle_rtt_ms  REAL NOT NULL,
	loaded_rtt_ms REAL NOT NULL,
	errors       INTEGER NOT NULL,
	json         BLOB NOT NULL
)`

// Open opens the history at path with the default byte bounds, keeping
// the last keep results (keep ≤ 0: DefaultKeep); see OpenLimits.
func Open(path string, keep int) (*Store, error) {
	return OpenLimits(path, Limits{Keep: keep})
}

// OpenLimits opens (creating if needed) the history at path, or an
// in-memory one for Memory, bounded by lim. The directory of path must
// exist: a wrong path is an error at startup, not a silently empty history
// later.
func OpenLimits(path string, lim Limits) (*Store, error) {
	if lim.Keep <= 0 {
		lim.Keep = DefaultKeep
	}
	if lim.MaxRowBytes <= 0 {
		lim.MaxRowBytes = DefaultMaxRowBytes
	}
	if lim.MaxTotalBytes <= 0 {
		lim.MaxTotalBytes = DefaultMaxTotalBytes
	}
	lim.MaxTotalBytes = max(lim.MaxTotalBytes, lim.MaxRowBytes)
	dsn := "file::memory:"
	if path != Memory {
		if path == "" {
			return nil, errors.New("history: empty database path")
		}
		dir := filepath.Dir(path)
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("history: database directory %s: %w", dir, errors.Unwrap(err))
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("history: %s is not a directory", dir)
		}
		dsn = "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("history: open %s: %w", path, err)
	}
	// One connection: an in-memory database exists per connection, and a
	// test server writes one result every few seconds at most.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	return &Store{db: db, lim: lim}, nil
}

// Usage returns the results stored and the bytes of their JSON.
func (s *Store) Usage(ctx context.Context) (rows int, bytes int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(length(json)), 0) FROM results`).Scan(&rows, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("history: usage: %w", err)
	}
	return rows, bytes, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Add stores res (replacing a result of the same ID) and forgets the
// oldest results beyond the store's count and byte limits. A result whose
// JSON is over the row cap is not stored (ErrTooLarge).
func (s *Store) Add(ctx context.Context, res *model.Result) error {
	if !ValidID(res.ID) {
		return ErrBadID
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("history: encode result: %w", err)
	}
	if int64(len(raw)) > s.lim.MaxRowBytes {
		return fmt.Errorf("%w: %d bytes of JSON, the limit is %d", ErrTooLarge, len(raw), s.lim.MaxRowBytes)
	}
	sum := summarize(res)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO results
		(id, start, software, download_bps, upload_bps, idle_rtt_ms, loaded_rtt_ms, errors, json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sum.ID, sum.Start.UTC().Format(time.RFC3339Nano), sum.Software, sum.DownloadBps, sum.UploadBps,
		sum.IdleRTTMs, sum.LoadedRTTMs, sum.Errors, raw); err != nil {
		return fmt.Errorf("history: insert: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM results WHERE seq NOT IN
		(SELECT seq FROM results ORDER BY seq DESC LIMIT ?)`, s.lim.Keep); err != nil {
		return fmt.Errorf("history: prune: %w", err)
	}
	// Newest first, the rows from the one that takes the running total of
	// JSON bytes past the budget on are forgotten. The new row is at most
	// the row cap, itself within the budget, so it stays.
	if _, err := tx.ExecContext(ctx, `DELETE FROM results WHERE seq IN
		(SELECT seq FROM (SELECT seq, SUM(length(json)) OVER (ORDER BY seq DESC) AS total FROM results)
		 WHERE total > ?)`, s.lim.MaxTotalBytes); err != nil {
		return fmt.Errorf("history: prune by size: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history: commit: %w", err)
	}
	return nil
}

// List returns up to limit results, newest first.
func (s *Store) List(ctx context.Context, limit int) ([]Summary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, start, software, download_bps, upload_bps,
		idle_rtt_ms, loaded_rtt_ms, errors FROM results ORDER BY seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("history: list: %w", err)
	}
	defer rows.Close()
	out := []Summary{}
	for rows.Next() {
		var (
			sum   Summary
			start string
		)
		if err := rows.Scan(&sum.ID, &start, &sum.Software, &sum.DownloadBps, &sum.UploadBps,
			&sum.IdleRTTMs, &sum.LoadedRTTMs, &sum.Errors); err != nil {
			return nil, fmt.Errorf("history: list: %w", err)
		}
		sum.Start, _ = time.Parse(time.RFC3339Nano, start)
		out = append(out, sum)
	}
	return out, rows.Err()
}

// Get returns the stored result JSON of id.
func (s *Store) Get(ctx context.Context, id string) (json.RawMessage, error) {
	if !ValidID(id) {
		return nil, ErrBadID
	}
	var raw []byte
	err := s.db.QueryRowContext(ctx, `SELECT json FROM results WHERE id = ?`, id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("history: get: %w", err)
	}
	return raw, nil
}

func summarize(r *model.Result) Summary {
	s := Summary{ID: r.ID, Start: r.Start, Software: r.Client.Software, Errors: len(r.Errors)}
	if r.Baseline != nil {
		s.IdleRTTMs = r.Baseline.RTTMs.Min
	}
	for _, d := range []*model.DirectionResult{r.Download, r.Upload} {
		if d == nil {
			continue
		}
		if d.Direction == "upload" {
			s.UploadBps = d.GoodputBps
		} else {
			s.DownloadBps = d.GoodputBps
		}
		if d.Latency != nil {
			s.LoadedRTTMs = max(s.LoadedRTTMs, d.Latency.RTTMs.P50)
		}
	}
	return s
}
