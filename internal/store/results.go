package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
)

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

// Limits bound the results a store keeps; zero fields take the defaults.
type Limits struct {
	// Keep is how many results of each kind are kept, newest first.
	Keep int
	// MaxRowBytes bounds one result's stored JSON: a larger one is
	// refused with ErrTooLarge, never cut.
	MaxRowBytes int64
	// MaxTotalBytes bounds the stored JSON of all results: adding one
	// forgets the oldest until the rest fit. It is at least MaxRowBytes,
	// so the newest result is always kept.
	MaxTotalBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.Keep <= 0 {
		l.Keep = DefaultKeep
	}
	if l.MaxRowBytes <= 0 {
		l.MaxRowBytes = DefaultMaxRowBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalBytes
	}
	l.MaxTotalBytes = max(l.MaxTotalBytes, l.MaxRowBytes)
	return l
}

// ErrTooLarge is returned by AddResult for a result over the row cap.
var ErrTooLarge = errors.New("store: result too large to store")

// ErrNotFound is returned by GetResult for an ID the store does not hold.
var ErrNotFound = errors.New("store: no such result")

// ErrBadID is returned for an ID that cannot be a result's: result IDs are
// the server's session IDs, 32 lower-case hex digits.
var ErrBadID = errors.New("store: malformed result id")

var idPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// ValidID reports whether id has the form of a result ID.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// Summary is one row of the list of past results. For a server record
// (Kind other than page) the figures are the server's own (docs/store.md).
type Summary struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
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

// ErrBadKind is returned for a result kind not in model.ResultKinds.
var ErrBadKind = errors.New("store: unknown result kind")

// ValidKind reports whether kind is a result kind (model.ResultKinds).
func ValidKind(kind string) bool {
	for _, k := range model.ResultKinds() {
		if kind == k {
			return true
		}
	}
	return false
}

func (s *sqlStore) AddResult(ctx context.Context, res *model.Result) error {
	if !ValidID(res.ID) {
		return ErrBadID
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("store: encode result: %w", err)
	}
	sum := summarize(res)
	sum.Kind = model.KindPage
	return s.addRow(ctx, sum, raw)
}

func (s *sqlStore) AddRecord(ctx context.Context, rec *model.ServerRecord) error {
	switch {
	case !ValidID(rec.ID):
		return ErrBadID
	case rec.Kind == model.KindPage || !ValidKind(rec.Kind):
		return fmt.Errorf("%w: %.40q is not a server record's kind", ErrBadKind, rec.Kind)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store: encode %s record: %w", rec.Kind, err)
	}
	return s.addRow(ctx, summarizeRecord(rec), raw)
}

// addRow stores one result of any kind: within the row cap, replacing one
// of the same ID, then forgets the kind's oldest beyond Keep and the
// oldest of all kinds beyond the byte budget.
func (s *sqlStore) addRow(ctx context.Context, sum Summary, raw []byte) error {
	// The software column is a client's words: PostgreSQL refuses a NUL
	// or invalid UTF-8 in TEXT, and a list row needs no more than this.
	sum.Software = cleanText(sum.Software, maxSoftwareLen)
	if int64(len(raw)) > s.lim.MaxRowBytes {
		return fmt.Errorf("%w: %d bytes of JSON, the limit is %d", ErrTooLarge, len(raw), s.lim.MaxRowBytes)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer tx.Rollback()
	// Replacing deletes and inserts, so a re-added result is the newest.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM results WHERE id = ?`), sum.ID); err != nil {
		return fmt.Errorf("store: replace result: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO results
		(id, kind, start, software, download_bps, upload_bps, idle_rtt_ms, loaded_rtt_ms, errors, json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		sum.ID, sum.Kind, sum.Start.UTC().Format(time.RFC3339Nano), sum.Software, sum.DownloadBps, sum.UploadBps,
		sum.IdleRTTMs, sum.LoadedRTTMs, sum.Errors, raw); err != nil {
		return fmt.Errorf("store: insert result: %w", err)
	}
	// Keep counts per kind, so the server's records never push the
	// page's results out of its history.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM results WHERE kind = ? AND seq NOT IN
		(SELECT seq FROM (SELECT seq FROM results WHERE kind = ? ORDER BY seq DESC LIMIT ?) AS k)`),
		sum.Kind, sum.Kind, s.lim.Keep); err != nil {
		return fmt.Errorf("store: prune results: %w", err)
	}
	// Newest first, the rows from the one that takes the running total of
	// JSON bytes past the budget on are forgotten, whatever their kind.
	// The new row is at most the row cap, itself within the budget, so it
	// stays.
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM results WHERE seq IN
		(SELECT seq FROM (SELECT seq, SUM(length(json)) OVER (ORDER BY seq DESC) AS total FROM results) AS t
		 WHERE total > ?)`), s.lim.MaxTotalBytes); err != nil {
		return fmt.Errorf("store: prune results by size: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit result: %w", err)
	}
	return nil
}

func (s *sqlStore) ListResults(ctx context.Context, limit int) ([]Summary, error) {
	return s.ListResultsKind(ctx, "", limit)
}

func (s *sqlStore) ListResultsKind(ctx context.Context, kind string, limit int) ([]Summary, error) {
	if kind != "" && !ValidKind(kind) {
		return nil, fmt.Errorf("%w: %.40q", ErrBadKind, kind)
	}
	limit = min(max(limit, 0), MaxListLimit)
	where, args := "", []any{limit}
	if kind != "" {
		where, args = "WHERE kind = ? ", []any{kind, limit}
	}
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, kind, start, software, download_bps, upload_bps,
		idle_rtt_ms, loaded_rtt_ms, errors FROM results `+where+`ORDER BY seq DESC LIMIT ?`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: list results: %w", err)
	}
	defer rows.Close()
	out := []Summary{}
	for rows.Next() {
		var (
			sum   Summary
			start string
		)
		if err := rows.Scan(&sum.ID, &sum.Kind, &start, &sum.Software, &sum.DownloadBps, &sum.UploadBps,
			&sum.IdleRTTMs, &sum.LoadedRTTMs, &sum.Errors); err != nil {
			return nil, fmt.Errorf("store: list results: %w", err)
		}
		sum.Start, _ = time.Parse(time.RFC3339Nano, start)
		out = append(out, sum)
	}
	return out, rows.Err()
}

func (s *sqlStore) GetResult(ctx context.Context, id string) (json.RawMessage, error) {
	if !ValidID(id) {
		return nil, ErrBadID
	}
	var raw []byte
	err := s.db.QueryRowContext(ctx, s.q(`SELECT json FROM results WHERE id = ?`), id).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: get result: %w", err)
	}
	return raw, nil
}

func (s *sqlStore) ResultUsage(ctx context.Context) (rows int, bytes int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(length(json)), 0) FROM results`).Scan(&rows, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("store: result usage: %w", err)
	}
	return rows, bytes, nil
}

// maxSoftwareLen bounds a summary row's software name, in bytes.
const maxSoftwareLen = 256

// cleanText is s as valid UTF-8 without control characters, cut to at
// most n bytes on a character boundary.
func cleanText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// summarizeRecord is a server record's row: its own figures, with the
// direction's goodput as the server measured it.
func summarizeRecord(r *model.ServerRecord) Summary {
	s := Summary{ID: r.ID, Kind: r.Kind, Start: r.Start, Software: r.Client.Software, Errors: len(r.Errors),
		IdleRTTMs: r.IdleRTTMs, LoadedRTTMs: r.LoadedRTTMs}
	if r.Download != nil {
		s.DownloadBps = r.Download.GoodputBps
	}
	if r.Upload != nil {
		s.UploadBps = r.Upload.GoodputBps
	}
	if r.MBM != nil {
		s.Errors += len(r.MBM.Errors)
	}
	return s
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
