package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sonde-project/sonde/internal/model"
)

func record(kind string, i int) *model.ServerRecord {
	k := len(model.ResultKinds())
	for j, x := range model.ResultKinds() {
		if x == kind {
			k = j
		}
	}
	return &model.ServerRecord{
		Schema: model.ServerRecordSchemaVersion, ID: fmt.Sprintf("%031x%x", i+1, k), Kind: kind,
		Start:     time.Date(2026, 1, 2, 3, 5, i, 0, time.UTC),
		Client:    model.Endpoint{Software: "sonde/test"},
		Download:  &model.DirectionResult{Direction: "download", GoodputBps: 1e6 * float64(i+1)},
		Upload:    &model.DirectionResult{Direction: "upload", GoodputBps: 2e6},
		IdleRTTMs: 3, LoadedRTTMs: 30, Errors: []string{"a", "b"},
	}
}

// testResultKinds: server records of every kind beside the page's
// results, each kind keeping its own last Keep, listed per kind; a page
// kind or an unknown one is refused as a record.
func testResultKinds(t *testing.T, url string) {
	ctx := context.Background()
	s := open(t, url, Options{Results: Limits{Keep: 2}})
	for i := range 3 {
		if err := s.AddResult(ctx, result(i)); err != nil {
			t.Fatal(err)
		}
		for _, k := range model.ResultKinds()[1:] { // every server record kind
			if err := s.AddRecord(ctx, record(k, i)); err != nil {
				t.Fatalf("%s record: %v", k, err)
			}
		}
	}
	all, err := s.ListResults(ctx, 100)
	if err != nil || len(all) != 2*len(model.ResultKinds()) {
		t.Fatalf("every kind keeps its last 2: %d rows, %v", len(all), err)
	}
	pages, err := s.ListResultsKind(ctx, model.KindPage, 100)
	if err != nil || len(pages) != 2 || pages[0].ID != result(2).ID || pages[0].Kind != model.KindPage {
		t.Fatalf("page results %+v, %v", pages, err)
	}
	tcp, err := s.ListResultsKind(ctx, model.KindTCP, 100)
	if err != nil || len(tcp) != 2 {
		t.Fatalf("tcp records %+v, %v", tcp, err)
	}
	want := Summary{ID: record(model.KindTCP, 2).ID, Kind: model.KindTCP, Start: record("", 2).Start, Software: "sonde/test",
		DownloadBps: 3e6, UploadBps: 2e6, IdleRTTMs: 3, LoadedRTTMs: 30, Errors: 2}
	if tcp[0] != want {
		t.Errorf("newest tcp row %+v, want %+v", tcp[0], want)
	}
	raw, err := s.GetResult(ctx, want.ID)
	var got model.ServerRecord
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Kind != model.KindTCP || got.Schema != model.ServerRecordSchemaVersion {
		t.Errorf("stored record %s: %v", raw, err)
	}
	if _, err := s.ListResultsKind(ctx, "nope", 10); !errors.Is(err, ErrBadKind) {
		t.Errorf("unknown kind listed: %v", err)
	}
	for _, k := range []string{model.KindPage, "", "x' OR 1=1", strings.Repeat("k", 100)} {
		if err := s.AddRecord(ctx, record(k, 9)); !errors.Is(err, ErrBadKind) {
			t.Errorf("record of kind %q: %v, want ErrBadKind", k, err)
		}
	}
	bad := record(model.KindUDP, 9)
	bad.ID = "../x"
	if err := s.AddRecord(ctx, bad); !errors.Is(err, ErrBadID) {
		t.Errorf("malformed record id: %v", err)
	}
}

// TestRecordByteBudget: records count in the one byte budget of all
// results: the total stays within it, the newest row always kept.
func TestRecordByteBudget(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir()+"/s.db", Options{Results: Limits{MaxRowBytes: 4 << 10, MaxTotalBytes: 8 << 10}})
	for i := range 20 {
		r := record(model.KindTCP, i)
		r.Notes = []string{strings.Repeat("n", 2000)}
		if err := s.AddRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.AddResult(ctx, result(i)); err != nil {
			t.Fatal(err)
		}
		if _, b, err := s.ResultUsage(ctx); err != nil || b > 8<<10 {
			t.Fatalf("after %d: %d bytes stored, budget 8 KiB (%v)", i, b, err)
		}
	}
	big := record(model.KindTCP, 99)
	big.Notes = []string{strings.Repeat("n", 5000)}
	if err := s.AddRecord(ctx, big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("record over the row cap: %v", err)
	}
}

// FuzzCleanText: whatever a client calls itself, the software column gets
// valid UTF-8 without control characters (PostgreSQL refuses a NUL in
// TEXT), within the bound, and a clean short name unchanged.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{"sonde/1.0", "a\x00b", "\xff\xfe", "é" + strings.Repeat("ü", 200), "x\ny\tz\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := cleanText(s, maxSoftwareLen)
		if len(c) > maxSoftwareLen || !utf8.ValidString(c) || strings.ContainsFunc(c, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("cleanText(%q) = %q", s, c)
		}
		if len(s) <= maxSoftwareLen && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) && c != s {
			t.Fatalf("clean %q changed to %q", s, c)
		}
	})
}

// TestOldResultsArePage: rows stored before migration 5 are the page's,
// listed as its kind and kept by its Keep.
func TestOldResultsArePage(t *testing.T) {
	path := t.TempDir() + "/results.db"
	db, err := sql.Open(sqliteDriver, "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE results (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
		start TEXT NOT NULL, software TEXT NOT NULL, download_bps REAL NOT NULL, upload_bps REAL NOT NULL,
		idle_rtt_ms REAL NOT NULL, loaded_rtt_ms REAL NOT NULL, errors INTEGER NOT NULL, json BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO results (id, start, software, download_bps, upload_bps, idle_rtt_ms, loaded_rtt_ms, errors, json)
		VALUES (?, '2026-01-02T03:04:00Z', 'old', 1, 2, 3, 4, 0, '{}')`, result(0).ID); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ctx := context.Background()
	s := open(t, path, Options{Results: Limits{Keep: 1}})
	if err := s.AddRecord(ctx, record(model.KindTCP, 1)); err != nil {
		t.Fatal(err)
	}
	pages, err := s.ListResultsKind(ctx, model.KindPage, 10)
	if err != nil || len(pages) != 1 || pages[0].ID != result(0).ID || pages[0].Kind != model.KindPage {
		t.Errorf("old row after migration 5: %+v %v", pages, err)
	}
}
