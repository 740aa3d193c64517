package server

import (
	"runtime/debug"
	"testing"
)

// TestApplyMemoryLimit: the flag sets the runtime's limit, off lifts it,
// and GOMEMLIMIT in the environment wins over either.
func TestApplyMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	t.Setenv("GOMEMLIMIT", "")
	if err := ApplyMemoryLimit("200MiB"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 200<<20 {
		t.Fatalf("limit %d, want 200 MiB", got)
	}
	if err := ApplyMemoryLimit("off"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<63-1 {
		t.Fatalf("limit %d after off, want none", got)
	}
	t.Setenv("GOMEMLIMIT", "300MiB")
	debug.SetMemoryLimit(300 << 20) // what the runtime did at start
	if err := ApplyMemoryLimit("100MiB"); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("limit %d with GOMEMLIMIT set, want GOMEMLIMIT's 300 MiB", got)
	}
	if err := ApplyMemoryLimit("1MiB"); err == nil {
		t.Fatal("a limit below the minimum was taken")
	}
}
