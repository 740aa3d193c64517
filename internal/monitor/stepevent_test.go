package monitor

import (
	"context"
	"io"
	"log"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
)

// TestBaselineStepWrittenOnce: a baseline step seen by every detector
// pass for 15 minutes (each over a window that starts somewhere else, with
// noise, a transition minute between the levels and rare losses) is
// written once; a kill -9 and a start 3 minutes later do not write it
// again (the new run's detectors see only its own probes). Its start
// minute varies with the transition (15 or 16): the written-events key
// holds within a run because every pass finds the same change point.
func TestBaselineStepWrittenOnce(t *testing.T) {
	for seed := range uint64(4) {
		c, fs := testCore(t, time.Second)
		ctx := context.Background()
		if err := c.restart(ctx, t0); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 7))
		trans := 20e6 + r.Float64()*10e6
		rtt := func(seq uint32) int64 {
			ns := t0 + int64(seq)*100e6
			base := 20e6
			if m := (ns - t0) / 60e9; m == 15 {
				base = trans
			} else if m > 15 {
				base = 30e6
			}
			if r.IntN(1000) == 0 {
				return -1
			}
			return int64(base + r.ExpFloat64()*float64(r.IntN(3))*1e6)
		}
		run := func(c *core, from, to int64) {
			seq := uint32(from * 10)
			for sec := from + 1; sec <= to; sec++ {
				for ; int64(seq) < sec*10-20; seq++ {
					c.ring.Push(sample(seq, rtt(seq)))
				}
				c.step(ctx, t0+sec*1e9, false)
			}
		}
		run(c, 0, 24*60) // the step is written about 21.5 min in
		// A kill -9 at 24 min, a start at 27 min, 15 minutes more.
		c2 := newCore(c.plan, fs, c.mid, probe.NewRing(0), log.New(io.Discard, "", 0))
		if err := c2.restart(ctx, t0+27*60e9); err != nil {
			t.Fatal(err)
		}
		run(c2, 27*60, 42*60)
		evs, err := fs.Events(ctx, c.mid, t0, t0+1e13, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var steps []model.MonitorEvent
		for _, e := range evs {
			if e.Kind == model.EventBaselineStep {
				steps = append(steps, e)
			}
		}
		if len(steps) != 1 {
			t.Fatalf("seed %d: %d baseline-step events: %+v", seed, len(steps), steps)
		}
		if m := (steps[0].StartNs - t0) / 60e9; m != 15 && m != 16 {
			t.Errorf("seed %d: step at minute %d", seed, m)
		}
	}
}
