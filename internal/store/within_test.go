package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWithin: a reader does not create a store; fn's error carries the
// location, running out of time names the work and the deadline.
func TestWithin(t *testing.T) {
	loc, err := ParseURL(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := Within(ctx, loc, true, time.Minute, "x", func(context.Context, Store) error { return nil }); err == nil {
		t.Fatal("a missing store was opened for reading")
	}
	err = Within(ctx, loc, false, time.Minute, "x", func(context.Context, Store) error { return errors.New("boom") })
	if err == nil || !strings.HasPrefix(err.Error(), loc.String()+": boom") {
		t.Errorf("%v", err)
	}
	err = Within(ctx, loc, true, time.Minute, "the report", func(context.Context, Store) error { return context.DeadlineExceeded })
	if err == nil || !strings.Contains(err.Error(), "the report took longer than --deadline 1m0s") {
		t.Errorf("%v", err)
	}
}

// TestMigrateWithin: a migration reports the schema version; a deadline
// that passes first says so.
func TestMigrateWithin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	loc, err := ParseURL(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := MigrateWithin(context.Background(), loc, path, time.Minute)
	if err != nil || v < 1 {
		t.Fatalf("version %d, %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MigrateWithin(ctx, loc, path, time.Minute); err == nil {
		t.Error("a cancelled migration succeeded")
	}
}
