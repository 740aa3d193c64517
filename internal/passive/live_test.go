package passive

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// TestLiveWorkers: a live capture split by flow over two workers (as the
// kernel's fanout splits it), each fed by its own goroutine, gives the
// analysis of one worker.
func TestLiveWorkers(t *testing.T) {
	pkts := manyFlows(2, 800)
	cfg := Config{Interface: -1, IdleTimeout: 20 * time.Second}
	one := NewLive(cfg, 1, 1700000000e9).Worker(0)
	for _, p := range pkts {
		one.Packet(p.t+1700000000e9, p.data)
	}
	want := one.Finish(nil)
	if len(want.TCP) < 600 || want.Stats.EvictedFlows == 0 {
		t.Fatalf("%d TCP, %d evicted: want hundreds, evictions", len(want.TCP), want.Stats.EvictedFlows)
	}
	var streamed int
	cfg.OnRecord = func(Record) { streamed++ } // NewLive serialises the calls
	l := NewLive(cfg, 2, 1700000000e9)
	if l.Workers() != 2 {
		t.Fatalf("%d workers", l.Workers())
	}
	feedLive(l, pkts)
	a, got := l.Finish(nil)
	// Each worker scans for idle flows on its own clock: a 4-tuple that
	// goes quiet past a timeout and is used again may be split at
	// another place; every packet is in the same 4-tuple's records.
	if got.Packets != want.Packets || got.Bytes != want.Bytes || got.Skipped != want.Skipped || got.StartUnix != want.StartUnix || got.DurationS != want.DurationS {
		t.Errorf("two live workers: %d packets, %d bytes, %d skipped, %.3f+%.3f s; one worker: %d, %d, %d, %.3f+%.3f s",
			got.Packets, got.Bytes, got.Skipped, got.StartUnix, got.DurationS, want.Packets, want.Bytes, want.Skipped, want.StartUnix, want.DurationS)
	}
	per := map[[2]string][2]uint64{}
	for i, r := range []*model.Analysis{want, got} {
		for _, c := range r.TCP {
			k := [2]string{c.A, c.B}
			n := per[k]
			n[i] += c.AB.Packets + c.BA.Packets
			per[k] = n
		}
	}
	for k, n := range per {
		if n[0] != n[1] {
			t.Errorf("%s > %s: %d packets with two live workers, %d with one", k[0], k[1], n[1], n[0])
		}
	}
	if nt, nq := a.Records(); nt != len(got.TCP) || nq != len(got.QUIC) || nq != len(want.QUIC) || streamed != nt+nq {
		t.Errorf("Records() = %d, %d, %d streamed; kept %d, %d (one worker: %d QUIC)", nt, nq, streamed, len(got.TCP), len(got.QUIC), len(want.QUIC))
	}
	// Per-sample outputs keep one worker.
	if n := NewLive(Config{KeepSamples: true}, 4, 0).Workers(); n != 1 {
		t.Errorf("KeepSamples: %d workers, want 1", n)
	}
}

// feedLive feeds pkts to l's two workers split by flow, each worker from
// its own goroutine, as the kernel's fanout would.
func feedLive(l *Live, pkts []timedPacket) {
	split := make([][]timedPacket, 2)
	for _, p := range pkts {
		var ip ipPacket
		i := 0
		if decodeIP(p.data, &ip) && flowHash(&ip)&1 == 1 {
			i = 1
		}
		split[i] = append(split[i], p)
	}
	var wg sync.WaitGroup
	for i, ps := range split {
		w := l.Worker(i)
		wg.Go(func() {
			for _, p := range ps {
				w.Packet(p.t+1700000000e9, p.data)
			}
		})
	}
	wg.Wait()
}

// TestLiveSpill: two live workers finish their records into one spill
// (runs of 37 records here): read back, the analysis is the one they
// give with the records in memory, and Close removes the file.
func TestLiveSpill(t *testing.T) {
	pkts := manyFlows(4, 700)
	cfg := Config{Interface: -1, IdleTimeout: 20 * time.Second}
	l := NewLive(cfg, 2, 1700000000e9)
	feedLive(l, pkts)
	_, kept := l.Finish(nil)
	if len(kept.TCP) < 500 {
		t.Fatalf("%d TCP records: want hundreds", len(kept.TCP))
	}
	cfg.Spill, cfg.SpillDir = true, t.TempDir()
	l = NewLive(cfg, 2, 1700000000e9)
	l.main.spill.run = 37
	feedLive(l, pkts)
	a, r := l.Finish(nil)
	if r.Spill == nil || len(r.TCP) != 0 || !a.spill.spilled() {
		t.Fatalf("records not spilled (%d in memory)", len(r.TCP))
	}
	back := readBack(t, r)
	if figures(t, back) != figures(t, kept) {
		t.Errorf("spilled: %d TCP, %d QUIC read back; kept: %d, %d, or their figures differ", len(back.TCP), len(back.QUIC), len(kept.TCP), len(kept.QUIC))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(cfg.SpillDir); len(ents) != 0 {
		t.Errorf("%d files left in the spill directory", len(ents))
	}
}
