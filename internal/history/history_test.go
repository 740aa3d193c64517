package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

func result(i int) *model.Result {
	return &model.Result{
		Schema:   model.SchemaVersion,
		ID:       fmt.Sprintf("%032x", i+1),
		Start:    time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC),
		Client:   model.Endpoint{Software: "sonde-web"},
		Baseline: &model.RTTResult{RTTMs: model.Stats{N: 20, Min: 10 + float64(i)}},
		Download: &model.DirectionResult{Direction: "download", GoodputBps: 100e6 * float64(i+1),
			Latency: &model.RTTResult{RTTMs: model.Stats{N: 50, P50: 40}}},
		Upload: &model.DirectionResult{Direction: "upload", GoodputBps: 10e6,
			Latency: &model.RTTResult{RTTMs: model.Stats{N: 50, P50: 400}}},
		Errors: []string{"x"},
	}
}

func TestAddListGetPrune(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "results.db")
	s, err := Open(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.Add(ctx, result(i)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("kept %d results, want the last 3", len(list))
	}
	want := Summary{ID: result(4).ID, Start: result(4).Start, Software: "sonde-web", DownloadBps: 500e6,
		UploadBps: 10e6, IdleRTTMs: 14, LoadedRTTMs: 400, Errors: 1}
	if list[0] != want {
		t.Errorf("newest row %+v, want %+v", list[0], want)
	}
	if list[2].ID != result(2).ID {
		t.Errorf("oldest kept %s, want %s", list[2].ID, result(2).ID)
	}
	if _, err := s.Get(ctx, result(0).ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("pruned result: err %v, want ErrNotFound", err)
	}
	raw, err := s.Get(ctx, result(3).ID)
	if err != nil {
		t.Fatal(err)
	}
	var got model.Result
	if err := json.Unmarshal(raw, &got); err != nil || got.ID != result(3).ID || got.Download.GoodputBps != 400e6 {
		t.Errorf("stored JSON %s: %v", raw, err)
	}
	s.Close()

	// The file persists across opens.
	s, err = Open(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if list, _ := s.List(ctx, 1); len(list) != 1 || list[0].ID != result(4).ID {
		t.Errorf("after reopen: %+v", list)
	}
}

func TestMalformedIDs(t *testing.T) {
	s, err := Open(Memory, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{"", "abc", strings.Repeat("g", 32), strings.Repeat("A", 32), "../../etc/passwd", strings.Repeat("0", 33), "' OR 1=1 --"} {
		if _, err := s.Get(ctx, id); !errors.Is(err, ErrBadID) {
			t.Errorf("Get(%q): %v, want ErrBadID", id, err)
		}
	}
	r := result(0)
	r.ID = "not-an-id"
	if err := s.Add(ctx, r); !errors.Is(err, ErrBadID) {
		t.Errorf("Add with a bad id: %v", err)
	}
	if _, err := s.Get(ctx, result(1).ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestMissingDirectory(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "no", "such", "results.db"), 0)
	if err == nil {
		t.Fatal("Open in a missing directory succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "no such file or directory") {
		t.Errorf("error %q: want one line naming the missing directory", msg)
	}
}

func TestReplaceSameID(t *testing.T) {
	s, err := Open(Memory, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	r := result(0)
	_ = s.Add(ctx, r)
	r.Download.GoodputBps = 1
	if err := s.Add(ctx, r); err != nil {
		t.Fatal(err)
	}
	list, _ := s.List(ctx, 10)
	if len(list) != 1 || list[0].DownloadBps != 1 {
		t.Errorf("re-adding an id: %+v", list)
	}
}

// bigResult is result(i) carrying about n bytes of JSON in its notes.
func bigResult(i, n int) *model.Result {
	r := result(i)
	r.Notes = []string{strings.Repeat("n", n)}
	return r
}

// TestRowCap: a result over the row cap is refused with ErrTooLarge and
// not stored; one under it is.
func TestRowCap(t *testing.T) {
	ctx := context.Background()
	s, err := OpenLimits(Memory, Limits{MaxRowBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(ctx, bigResult(0, 100<<10)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("100 KiB result with a 64 KiB cap: %v, want ErrTooLarge", err)
	}
	if _, err := s.Get(ctx, result(0).ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused result was stored: %v", err)
	}
	if err := s.Add(ctx, bigResult(1, 32<<10)); err != nil {
		t.Fatalf("32 KiB result: %v", err)
	}
}

// TestTotalBytesCap: adding results past the byte budget forgets the
// oldest ones, the stored JSON never exceeds the budget, and the newest
// result is always kept, even when it alone takes most of it.
func TestTotalBytesCap(t *testing.T) {
	ctx := context.Background()
	const row, budget = 20 << 10, 100 << 10
	s, err := OpenLimits(filepath.Join(t.TempDir(), "h.db"), Limits{Keep: 1000, MaxRowBytes: budget, MaxTotalBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20 {
		if err := s.Add(ctx, bigResult(i, row)); err != nil {
			t.Fatal(err)
		}
		n, bytes, err := s.Usage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if bytes > budget {
			t.Fatalf("after %d adds: %d bytes stored, over the %d budget", i+1, bytes, budget)
		}
		if i >= 5 && n != 4 {
			// Each row is a little over 20 KiB: four fit in 100 KiB.
			t.Fatalf("after %d adds: %d rows kept, want 4", i+1, n)
		}
		if _, err := s.Get(ctx, result(i).ID); err != nil {
			t.Fatalf("newest result %d not kept: %v", i, err)
		}
	}
	if _, err := s.Get(ctx, result(0).ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("oldest result kept past the budget: %v", err)
	}
	// One result of nearly the whole budget leaves only itself.
	if err := s.Add(ctx, bigResult(99, budget-2<<10)); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.Usage(ctx); n != 1 {
		t.Fatalf("after a near-budget result: %d rows, want 1", n)
	}
}

// TestDefaultLimits: zero limits take the documented defaults.
func TestDefaultLimits(t *testing.T) {
	s, err := OpenLimits(Memory, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.lim != (Limits{Keep: DefaultKeep, MaxRowBytes: DefaultMaxRowBytes, MaxTotalBytes: DefaultMaxTotalBytes}) {
		t.Fatalf("defaults: %+v", s.lim)
	}
}
