package monitor

import (
	"context"
	"math"
	"testing"

	"github.com/sonde-project/sonde/internal/ifstat"
	"github.com/sonde-project/sonde/internal/store"
)

// TestRecordCapacity: a start records the configured capacity; a change
// of source is recorded at once; a capacity learnt from the counters is
// recorded from the row that had it unknown; a learnt one that grows is
// recorded again a minute after the last row, not sooner; a refused write
// is retried.
func TestRecordCapacity(t *testing.T) {
	ctx := context.Background()
	co, fs := testCore(t, 2e9)
	tr, err := ifstat.NewTracker(ifstat.Config{Name: "test0", UpBps: 0.7e6, DownBps: 8e6})
	if err != nil {
		t.Fatal(err)
	}
	co.tracker = tr
	rows := func() []store.CapacityRow {
		t.Helper()
		rs, err := fs.Capacities(ctx, co.mid, 0, 1<<62)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	if err := co.restart(ctx, t0); err != nil {
		t.Fatal(err)
	}
	co.step(ctx, t0+1e9, false)
	want := []store.CapacityRow{{FromNs: t0, UpBps: 0.7e6, DownBps: 8e6, UpSource: store.CapacityConfigured, DownSource: store.CapacityConfigured}}
	if got := rows(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("after the start: %+v, want %+v", got, want)
	}

	// The downlink capacity is to be learnt from now: unknown at once.
	if err := tr.SetCapacity(0.7e6, 0); err != nil {
		t.Fatal(err)
	}
	co.step(ctx, t0+2e9, false)
	want = append(want, store.CapacityRow{FromNs: t0 + 2e9, UpBps: 0.7e6, UpSource: store.CapacityConfigured})
	if got := rows(); len(got) != 2 || got[1] != want[1] {
		t.Fatalf("after the downlink became unknown: %+v, want %+v", got, want)
	}

	// A download at 20 Mbit/s for 5 s teaches it; the row that had it
	// unknown now holds it.
	var rx uint64
	for i := range 51 {
		now := t0 + 3e9 + int64(i)*100e6
		tr.Observe(now, rx, 0)
		rx += 20e6 / 8 / 10
	}
	co.step(ctx, t0+9e9, false)
	got := rows()
	if len(got) != 2 || got[1].FromNs != t0+2e9 || got[1].DownSource != store.CapacityLearnt || math.Abs(got[1].DownBps-20e6) > 0.5e6 {
		t.Fatalf("after learning: %+v, want the row from 2 s with ≈ 20 Mbit/s learnt", got)
	}
	learnt := got[1]

	// Refused, then retried after retryEvery.
	if err := tr.SetCapacity(1e6, 0); err != nil {
		t.Fatal(err)
	}
	fs.failCap = true
	co.step(ctx, t0+10e9, false)
	fs.failCap = false
	co.step(ctx, t0+11e9, false) // before the retry time: nothing
	if got := rows(); len(got) != 2 {
		t.Fatalf("while refused: %+v", got)
	}
	co.step(ctx, t0+10e9+int64(retryEvery), false)
	if got := rows(); len(got) != 3 || got[2].UpBps != 1e6 || got[2].DownBps != learnt.DownBps {
		t.Fatalf("after the retry: %+v", got)
	}

	// The download runs at 30 Mbit/s: learnt higher, recorded once a
	// minute has passed since the last row (15 s).
	for i := range 51 {
		now := t0 + 16e9 + int64(i)*100e6
		tr.Observe(now, rx, 0)
		rx += 30e6 / 8 / 10
	}
	co.step(ctx, t0+22e9, false)
	if got := rows(); len(got) != 3 {
		t.Fatalf("a learnt change 7 s after the last row: recorded at once: %+v", got)
	}
	co.step(ctx, t0+75e9, false)
	if got := rows(); len(got) != 4 || got[3].FromNs != t0+75e9 || math.Abs(got[3].DownBps-30e6) > 0.5e6 || got[3].DownSource != store.CapacityLearnt {
		t.Fatalf("a minute later: %+v, want a row at 75 s with ≈ 30 Mbit/s learnt", got)
	}
}
