package labtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
)

// TestLateness: the median and p99 are over the delivered packets only.
func TestLateness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "truth.gt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := emulator.NewTruthWriter(f, emulator.TruthHeader{})
	if err != nil {
		t.Fatal(err)
	}
	// 100 delivered packets, late by 0 … 99 µs; 50 dropped ones, late by
	// a second, which must not count.
	for i := range 100 {
		w.Write(emulator.Record{Seq: uint64(i), Due: time.Millisecond, Sent: time.Millisecond + time.Duration(i)*time.Microsecond, Fate: emulator.Delivered})
	}
	for i := range 50 {
		w.Write(emulator.Record{Seq: uint64(100 + i), Sent: time.Second, Fate: emulator.DropQueue})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p50, p99, n, err := Lateness(path)
	if err != nil || n != 100 || p50 != 50*time.Microsecond || p99 != 99*time.Microsecond {
		t.Fatalf("Lateness = %v, %v, %d, %v; want 50µs, 99µs, 100", p50, p99, n, err)
	}
	if _, _, _, err := Lateness(filepath.Join(t.TempDir(), "none.gt")); err == nil {
		t.Fatal("a missing truth file gave no error")
	}
}
