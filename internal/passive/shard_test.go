package passive

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLeasedBuffersHeld: a file split across workers is read into a
// ring of buffers that the other workers' batches hold until their
// packets are analysed (ringLease). With three 4 KiB buffers (the ring
// goes round hundreds of times) and each buffer overwritten as it is
// freed, two and three workers give one worker's figures: a buffer
// freed while a batch still pointed into it would give the packets
// after it other figures (and, under -race, a race).
func TestLeasedBuffersHeld(t *testing.T) {
	file := pcapOf(t, manyFlows(3, 600))
	path := filepath.Join(t.TempDir(), "many.pcap")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	var want string
	for _, n := range []int{1, 2, 3} {
		a := New(Config{Interface: -1, IdleTimeout: 20 * time.Second, Workers: n})
		if n > 1 {
			a.ring = newRingLease(a, 3, 4<<10)
			a.ring.poison = true
		}
		if _, errs := a.ReadFiles([]string{path}); errors.Join(errs...) != nil {
			t.Fatal(errs)
		}
		r := a.Finish(nil)
		if n == 1 {
			if len(r.TCP) < 400 || len(file) < 100*(4<<10) {
				t.Fatalf("%d TCP records, %d bytes: want hundreds, and a file of hundreds of buffers", len(r.TCP), len(file))
			}
			want = figures(t, r)
			continue
		}
		if got := figures(t, r); got != want {
			t.Fatalf("%d workers, leased buffers: the analysis differs from one worker's", n)
		}
	}
}
