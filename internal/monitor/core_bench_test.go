package monitor

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/store"
)

// BenchmarkCoreSecond is the daemon loop's CPU per second of probing in
// steady state (bench/monitor_soak.sh measures the whole process): the
// detectors' 15-minute window full, a SQLite store on disk, one op = one
// step with one second of samples (one op in ten runs the detectors).
// cpu%/core is the share of one core the loop alone takes at that rate.
func BenchmarkCoreSecond(b *testing.B) {
	for _, bc := range []struct {
		targets int
		rate    float64
	}{{8, 10}, {1, 100}} {
		b.Run(fmt.Sprintf("%dx%g", bc.targets, bc.rate), func(b *testing.B) {
			c := benchCore(b, bc.targets, bc.rate)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2))
			per := int64(float64(time.Second) / bc.rate)
			seq := uint32(0)
			now := t0
			second := func() {
				for range int(bc.rate) {
					for s := range bc.targets {
						smp := model.ProbeSample{Stream: int32(s), Seq: seq, SentNs: now - 3e9 + int64(seq%uint32(bc.rate))*per,
							RTTNs: 15e6 + rng.Int64N(5e6), LatenessNs: int64(rng.IntN(50e3))}
						if rng.IntN(500) == 0 {
							smp.RTTNs, smp.Lost = -1, true
						}
						c.ring.Push(smp)
					}
					seq++
				}
				now += 1e9
				c.step(ctx, now, false)
			}
			for range int(recentSpan/time.Second) + 60 { // fill the window
				second()
			}
			b.ResetTimer()
			for range b.N {
				second()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9*100, "cpu%/core")
		})
	}
}

func benchCore(b testing.TB, targets int, rate float64) *core {
	var ts []string
	for i := range targets {
		ts = append(ts, fmt.Sprintf("stamp://127.0.0.%d:9", i+1))
	}
	cfg := Config{Targets: ts, Rate: rate, Store: filepath.Join(b.TempDir(), "m.db"), Name: "b"}
	cfg.Defaults()
	p, err := cfg.Validate()
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(context.Background(), p.Store, store.Options{CacheKiB: StoreCacheKiB})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	mid, err := st.Monitor(context.Background(), store.Identity{Name: "b"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Streams(context.Background(), mid, p.Streams); err != nil {
		b.Fatal(err)
	}
	c := newCore(p, st, mid, probe.NewRing(ringSize(p)), log.New(io.Discard, "", 0))
	if err := c.restart(context.Background(), t0); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkCoreMemory is the daemon loop's memory in steady state: after
// 20 simulated minutes (the detectors' window full), one op = one more
// simulated second. live-MB is the Go heap kept after a collection
// (runtime.MemStats.HeapAlloc after runtime.GC: the loop's retained
// structures, the store's Go side and the ring); alloc-MB/s what the loop
// allocates per second of probing (what the GC must clear, so what sets
// how far the heap grows between collections).
func BenchmarkCoreMemory(b *testing.B) {
	for _, bc := range []struct {
		targets int
		rate    float64
	}{{8, 10}, {1, 100}} {
		b.Run(fmt.Sprintf("%dx%g", bc.targets, bc.rate), func(b *testing.B) {
			c := benchCore(b, bc.targets, bc.rate)
			ctx := context.Background()
			sim := newSimProber(bc.targets, bc.rate)
			now := t0
			second := func() {
				now += int64(time.Second)
				sim.push(c.ring, now)
				c.step(ctx, now, false)
			}
			for range 20 * 60 {
				second()
			}
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			before := ms.TotalAlloc
			b.ResetTimer()
			for range b.N {
				second()
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			runtime.KeepAlive(c) // its structures are what is measured
			b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MB")
			b.ReportMetric(float64(ms.TotalAlloc-before)/float64(b.N)/(1<<20), "alloc-MB/s")
		})
	}
}
