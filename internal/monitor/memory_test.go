package monitor

import (
	"context"
	"fmt"
	"io"
	"log"
	"runtime"
	"testing"
	"time"
)

// loopSizes are the lengths and capacities of what the loop keeps between
// passes: each must stay bounded however long the daemon runs.
type loopSizes struct {
	recent, recentArr, pending, order, buf, written, long, backlog, events, lastEvents, watchBuf int
}

func sizesOf(c *core, w *watcher) loopSizes {
	c.mu.Lock()
	last := len(c.status.LastEvents)
	c.mu.Unlock()
	return loopSizes{recent: c.recent.Len(), recentArr: c.recent.Cap(), pending: cap(c.pending), order: cap(c.order),
		buf: cap(c.buf), written: len(c.written), long: len(c.long), backlog: len(c.backlog), events: len(c.events), lastEvents: last, watchBuf: cap(w.buf)}
}

// TestLoopMemoryBounded drives the daemon's loop (core and watcher, a real
// SQLite store) for 50 simulated minutes at both soak rows' rates, with a
// 20 s outage every 7 minutes so the detectors write events, and checks
// that every structure the loop keeps stays within its bound and does not
// grow from minute 20 (the detectors' window long full) to minute 50, and
// that the Go heap kept after a collection does not either. It catches a
// leak without timing anything (bench/monitor_soak.sh measures RSS).
func TestLoopMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("50 simulated minutes")
	}
	for _, bc := range []struct {
		targets int
		rate    float64
	}{{8, 10}, {1, 100}} {
		t.Run(fmt.Sprintf("%dx%g", bc.targets, bc.rate), func(t *testing.T) {
			c := benchCore(t, bc.targets, bc.rate)
			w, err := newWatcher(c.plan, log.New(io.Discard, "", 0))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			sim := newSimProber(bc.targets, bc.rate)
			sim.down = func(ns int64) bool { return (ns-t0)%int64(7*time.Minute) < int64(20*time.Second) }
			perSec := float64(bc.targets) * bc.rate
			window := int(perSec * recentSpan.Seconds())
			now := t0
			var at20 loopSizes
			var heap20 uint64
			for sec := 1; sec <= 50*60; sec++ {
				now += int64(time.Second)
				sim.push(c.ring, now)
				c.step(ctx, now, false)
				w.pass(c, now)
				if sec%60 != 0 || sec < 20*60 {
					continue
				}
				sz := sizesOf(c, w)
				// The bounds, each with what sets it.
				for _, b := range []struct {
					what    string
					got, hi int
				}{
					{"detectors' window", sz.recent, window + int(perSec)*2},
					{"window's ring", sz.recentArr, windowCap(bc.targets, bc.rate, time.Duration(c.plan.Timeout))},
					{"detectors' order", sz.order, window*3/2 + 1024},
					// Minutes not rolled up: at most the open one and the
					// one waiting for its late replies (horizon), doubled
					// for append's growth.
					{"pending probes", sz.pending, 2 * int(perSec*(60+float64(c.horizonNs)/1e9+2))},
					{"drain buffer", sz.buf, 2 * int(perSec*2)},
					// Events are forgotten two windows after their start;
					// an outage of every target every 7 minutes is one
					// link outage (5 kept here; without the pruning, 8 by
					// minute 50).
					{"events written", sz.written, int(2*recentSpan/(7*time.Minute)) + 2},
					// Outages seen open, by scope (link, target,
					// stream) and stream.
					{"open outages tracked", sz.long, 3 * (len(c.plan.Streams) + 1)},
					{"store backlog", sz.backlog, 0},
					{"events not written", sz.events, 0},
					{"status events", sz.lastEvents, maxLastEvents},
					{"watcher buffer", sz.watchBuf, 2 * int(perSec*4)},
				} {
					if b.got > b.hi {
						t.Fatalf("minute %d: %s holds %d, bound %d", sec/60, b.what, b.got, b.hi)
					}
				}
				var ms runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms)
				if sec == 20*60 {
					at20, heap20 = sz, ms.HeapAlloc
					continue
				}
				// Flat: the window's size varies by a few samples (late and
				// lost ones), the rest not at all past their bounds.
				if sz.recentArr > at20.recentArr || sz.order > at20.order || sz.recent > at20.recent+int(perSec)*2 {
					t.Fatalf("minute %d: window grew from %+v to %+v", sec/60, at20, sz)
				}
				// 2 MB: a leak of one detectors' sample per probe would
				// add 3.6 MB over these 30 minutes at either rate.
				if ms.HeapAlloc > heap20+2<<20 {
					t.Fatalf("minute %d: Go heap after GC %.1f MB, %.1f MB at minute 20", sec/60, float64(ms.HeapAlloc)/1e6, float64(heap20)/1e6)
				}
			}
			if at20.written == 0 {
				t.Fatal("no event written: the outages did not reach the detectors, so the events' bound was not tested")
			}
		})
	}
}
