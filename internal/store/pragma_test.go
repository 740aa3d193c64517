package store

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLitePragmas: every connection to a file gets the settings the
// memory bounds rest on (docs/monitor.md, "Memory"), the page cache the
// caller asks for, and SQLite's default cache when it asks for none.
func TestSQLitePragmas(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		cacheKiB int
		want     int64 // PRAGMA cache_size: negative KiB
	}{{0, -2000}, {256, -256}} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{CacheKiB: tc.cacheKiB})
		if err != nil {
			t.Fatal(err)
		}
		db := s.(*sqlStore).db
		// Hold several connections at once so the pragmas are seen on
		// more than the first.
		conns := make([]interface{ Close() error }, 0, 3)
		for range 3 {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			for _, p := range []struct {
				name string
				want int64
			}{{"cache_size", tc.want}, {"mmap_size", 0}, {"wal_autocheckpoint", walCheckpointPages}, {"journal_size_limit", journalSizeLimit}} {
				var got int64
				if err := c.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(&got); err != nil {
					t.Fatalf("PRAGMA %s: %v", p.name, err)
				}
				if got != p.want {
					t.Errorf("cache %d KiB: PRAGMA %s = %d, want %d", tc.cacheKiB, p.name, got, p.want)
				}
			}
			var mode string
			if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
				t.Errorf("journal_mode %q (%v), want wal", mode, err)
			}
		}
		for _, c := range conns {
			c.Close()
		}
		s.Close()
	}
	for _, bad := range []int{-1, MaxCacheKiB + 1} {
		_, err := Open(ctx, filepath.Join(t.TempDir(), "p.db"), Options{CacheKiB: bad})
		if err == nil || !strings.Contains(err.Error(), "page cache") {
			t.Errorf("CacheKiB %d: err %v, want a page cache error", bad, err)
		}
	}
}

// TestInsertShapesBounded: whatever the batch sizes, a table's rows go in
// INSERTs of a few fixed shapes, so the prepared statements (each held in
// SQLite's memory, outside the Go heap) stay few; before, each new batch
// size prepared one more, up to maxStmts.
func TestInsertShapesBounded(t *testing.T) {
	ctx := context.Background()
	s, mid := openOneStream(t, Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	ts, total := t0, 0
	for range 300 {
		n := 1 + rng.IntN(300) // 300 batches, nearly as many sizes
		if err := s.Write(ctx, mid, &Batch{Probes: probes(n, 0, ts)}); err != nil {
			t.Fatal(err)
		}
		ts += int64(n) * 100e6
		total += n
	}
	var rows int
	if err := s.(*sqlStore).db.QueryRowContext(ctx, "SELECT count(*) FROM probes").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != total {
		t.Fatalf("%d probe rows stored, want %d", rows, total)
	}
	st := &s.(*sqlStore).stmts
	st.mu.Lock()
	defer st.mu.Unlock()
	// Probe inserts: 64, 32 … 1 rows; the rest are the registration's.
	if n := len(st.m); n > 7+4 {
		t.Fatalf("%d statements prepared for 300 batches of random sizes, want at most 11 (7 insert shapes)", n)
	}
}

// TestStmtCacheOneConnection: a writer alone keeps one connection open.
// The write path's statements are prepared after the transaction that
// first ran them, on the connection it gave back; prepared inside it,
// each took a second connection that stayed open with its own copy of
// the statements, the schema and a page cache.
func TestStmtCacheOneConnection(t *testing.T) {
	ctx := context.Background()
	s, mid := openOneStream(t, Options{CacheKiB: 256})
	ts := t0
	for i := range 20 {
		n := 80 + i%3 // shapes 64, 16, 1, 2
		if err := s.Write(ctx, mid, &Batch{Probes: probes(n, 0, ts)}); err != nil {
			t.Fatal(err)
		}
		ts += int64(n) * 100e6
	}
	db := s.(*sqlStore).db
	if n := db.Stats().OpenConnections; n != 1 {
		t.Errorf("%d connections open after 20 batches from one writer, want 1", n)
	}
	st := &s.(*sqlStore).stmts
	st.mu.Lock()
	prepared, pending := len(st.m), len(st.pending)
	st.mu.Unlock()
	if prepared < 3 || pending != 0 {
		t.Errorf("%d statements prepared, %d pending after 20 batches, want the 64-, 16- and 1-row inserts prepared and none pending", prepared, pending)
	}
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM probes").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if want := 20*80 + 19; rows != want {
		t.Errorf("%d probe rows stored, want %d", rows, want)
	}
}

// openOneStream opens a store file with opt, closed when the test ends,
// and registers a monitor with one stream.
func openOneStream(t *testing.T, opt Options) (Store, int64) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "m.db"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	mid, err := s.Monitor(ctx, Identity{Name: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Streams(ctx, mid, testStreams[:1]); err != nil {
		t.Fatal(err)
	}
	return s, mid
}
