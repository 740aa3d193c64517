// Package history keeps the results of past tests a server assembled (the
// browser page's, docs/browser.md) in SQLite, so the page can list them and
// open one again. It owns the database file and its schema; it keeps the
// last N results and forgets older ones.
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

// DefaultKeep is how many results a store keeps unless told otherwise.
const DefaultKeep = 1000

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
	db   *sql.DB
	keep int
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

// Open opens (creating if needed) the history at path, or an in-memory one
// for Memory, keeping the last keep results (keep ≤ 0: DefaultKeep). The
// directory of path must exist: a wrong path is an error at startup, not a
// silently empty history later.
func Open(path string, keep int) (*Store, error) {
	if keep <= 0 {
		keep = DefaultKeep
	}
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
	return &Store{db: db, keep: keep}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Add stores res (replacing a result of the same ID) and forgets the
// oldest results beyond the store's limit.
func (s *Store) Add(ctx context.Context, res *model.Result) error {
	if !ValidID(res.ID) {
		return ErrBadID
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("history: encode result: %w", err)
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
		(SELECT seq FROM results ORDER BY seq DESC LIMIT ?)`, s.keep); err != nil {
		return fmt.Errorf("history: prune: %w", err)
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
