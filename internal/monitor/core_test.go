package monitor

import (
	"github.com/sonde-project/sonde/internal/units"

	"context"
	"errors"
	"io"
	"log"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/store"
)

const t0 = int64(1_767_225_600_000_000_000) // 2026-01-01 UTC, a minute start

// failing is a store whose writes fail while fail is set, as a full or
// read-only disk makes them.
type failing struct {
	store.Store
	fail   atomic.Bool
	writes atomic.Int64
	// failCap refuses capacity rows (capacity_test.go).
	failCap bool
}

func (f *failing) SetCapacity(ctx context.Context, m int64, r store.CapacityRow) error {
	if f.failCap {
		return errors.New("attempt to write a readonly database (8)")
	}
	return f.Store.SetCapacity(ctx, m, r)
}

func (f *failing) Write(ctx context.Context, m int64, b *store.Batch) error {
	f.writes.Add(1)
	if f.fail.Load() {
		return errors.New("attempt to write a readonly database (8)")
	}
	return f.Store.Write(ctx, m, b)
}

// testCore is a core on a fresh SQLite store with one stream, driven by
// hand: its ring takes the test's samples, step the test's clock.
func testCore(t testing.TB, timeout time.Duration) (*core, *failing) {
	t.Helper()
	c := Config{Targets: []string{"stamp://127.0.0.1:9"}, Timeout: units.Duration(timeout), Store: filepath.Join(t.TempDir(), "m.db"), Name: "t"}
	c.Defaults()
	p, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), p.Store, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fs := &failing{Store: st}
	mid, err := st.Monitor(context.Background(), store.Identity{Name: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Streams(context.Background(), mid, p.Streams); err != nil {
		t.Fatal(err)
	}
	co := newCore(p, fs, mid, probe.NewRing(0), log.New(io.Discard, "", 0))
	return co, fs
}

func sample(seq uint32, rtt int64) model.ProbeSample {
	s := model.ProbeSample{Stream: 0, Seq: seq, SentNs: t0 + int64(seq)*100e6, RTTNs: rtt}
	if rtt < 0 {
		s.Lost = true
	}
	return s
}

func rollups(t *testing.T, st store.Store) []model.MonitorRollup {
	t.Helper()
	var out []model.MonitorRollup
	err := st.Rollups(context.Background(), 1, 0, 1<<62, func(r store.Rollup) error {
		m, err := r.Model()
		out = append(out, m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRollupAfterLateHorizon: a minute is rolled up only once its last
// probe's late reply can no longer come, and a late reply that came
// before then is counted late, not lost, in the rollup and the raw rows.
func TestRollupAfterLateHorizon(t *testing.T) {
	const timeout = time.Second
	c, st := testCore(t, timeout)
	ctx := context.Background()
	// Minute 0: 600 probes, probe 599 (sent at t0+59.9 s) lost at its timeout.
	for i := range uint32(600) {
		rtt := int64(20e6)
		if i == 599 {
			rtt = -1
		}
		c.ring.Push(sample(i, rtt))
	}
	now := t0 + 61e9
	c.step(ctx, now, false)
	if n := len(rollups(t, st)); n != 0 {
		t.Fatalf("%d rollups written before the horizon", n)
	}
	// Its reply comes 3 s late (within 4 × timeout), after the minute ended.
	late := sample(599, 3e9)
	late.Lost, late.Late = true, true
	c.ring.Push(late)
	c.step(ctx, t0+63e9, false)
	horizonEnd := t0 + 60e9 + c.horizonNs
	c.step(ctx, horizonEnd-1, false)
	if n := len(rollups(t, st)); n != 0 {
		t.Fatalf("%d rollups written before the horizon", n)
	}
	c.step(ctx, horizonEnd+1, false)
	rs := rollups(t, st)
	if len(rs) != 1 || rs[0].Sent != 600 || rs[0].Lost != 1 || rs[0].Late != 1 || rs[0].MinNs != 20e6 {
		t.Fatalf("rollups %+v", rs)
	}
	var got []model.ProbeSample
	st.Probes(ctx, 1, t0, t0+60e9, func(p model.ProbeSample) error { got = append(got, p); return nil })
	if len(got) != 600 || !got[599].Late || got[599].RTTNs != 3e9 {
		t.Fatalf("%d raw rows, last %+v", len(got), got[len(got)-1])
	}
}

// TestStorageFailureBacklog: while the store fails, probing goes on and
// rows are held; once it is writable again every row is written and one
// storage event records the failure.
func TestStorageFailureBacklog(t *testing.T) {
	c, st := testCore(t, 200*time.Millisecond)
	ctx := context.Background()
	if err := c.restart(ctx, t0); err != nil {
		t.Fatal(err)
	}
	seq := uint32(0)
	second := func(now int64) {
		for range 10 {
			c.ring.Push(sample(seq, 15e6))
			seq++
		}
		c.step(ctx, now, false)
	}
	second(t0 + 1e9)
	st.fail.Store(true)
	for i := int64(2); i <= 20; i++ {
		second(t0 + i*1e9)
	}
	s := c.snapshot()
	if s.Store.Healthy || s.Store.BacklogRows != 190 || s.Store.LastError == "" {
		t.Fatalf("store status while failing: %+v", s.Store)
	}
	// Retried every 5 s, not every second; the rows of the seconds
	// before the retry that succeeds are held too (190 or more).
	if w := st.writes.Load(); w > 2+5 {
		t.Fatalf("%d write attempts in 19 s of failure", w)
	}
	st.fail.Store(false)
	for i := int64(21); i <= 26; i++ {
		second(t0 + i*1e9)
	}
	s = c.snapshot()
	if !s.Store.Healthy || s.Store.BacklogRows != 0 {
		t.Fatalf("store status after recovery: %+v", s.Store)
	}
	n := 0
	st.Probes(ctx, 1, 0, 1<<62, func(model.ProbeSample) error { n++; return nil })
	if n != int(seq) {
		t.Fatalf("%d probe rows stored, %d probed", n, seq)
	}
	evs, err := st.Events(ctx, 1, 0, 1<<62, 100)
	if err != nil {
		t.Fatal(err)
	}
	var storage []model.MonitorEvent
	for _, e := range evs {
		if e.Kind == model.EventStorage {
			storage = append(storage, e)
		}
	}
	if len(storage) != 1 || storage[0].StartNs != t0+2e9 || storage[0].Detail["rows_held"] < 190 {
		t.Fatalf("storage events %+v", storage)
	}
}

// TestBacklogBounded: a store that never recovers costs a bounded backlog.
func TestBacklogBounded(t *testing.T) {
	c, st := testCore(t, 200*time.Millisecond)
	c.backlogLimit = 100
	st.fail.Store(true)
	for i := int64(1); i <= 30; i++ {
		for j := range 10 {
			c.ring.Push(sample(uint32(i*10)+uint32(j), 15e6))
		}
		c.step(context.Background(), t0+i*1e9, false)
	}
	s := c.snapshot()
	if s.Store.BacklogRows > 100 || s.Store.DroppedRows != 300-uint64(s.Store.BacklogRows) {
		t.Fatalf("%+v", s.Store)
	}
}
