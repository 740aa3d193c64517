package server

import (
	"runtime/debug"
	"testing"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{DefaultMemoryLimit, 100 << 20, true},
		{"off", 0, true},
		{"0", 0, true},
		{"1GiB", 1 << 30, true},
		{"32MiB", 32 << 20, true},
		{"31MiB", 0, false},
		{"-64MiB", 0, false},
		{"lots", 0, false},
	} {
		got, err := ParseMemoryLimit(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseMemoryLimit(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

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
