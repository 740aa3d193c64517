package ifstat

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

const (
	ms   = int64(time.Millisecond)
	base = int64(1_700_000_000) * int64(time.Second)
)

// link feeds a Tracker synthetic readings every 100 ms.
type link struct {
	tb      testing.TB
	tr      *Tracker
	now     int64
	rx, tx  uint64 // raw counters as the driver shows them
	mask    uint64 // 1<<32-1 for a 32-bit driver, else all ones
	events  []model.MonitorEvent
	mu      sync.Mutex
	upCarry float64
	dnCarry float64
}

func newLink(tb testing.TB, cfg Config) *link {
	tb.Helper()
	l := &link{tb: tb, now: base, mask: math.MaxUint64}
	cfg.OnEvent = func(ev model.MonitorEvent) {
		l.mu.Lock()
		l.events = append(l.events, ev)
		l.mu.Unlock()
	}
	tr, err := NewTracker(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	l.tr = tr
	return l
}

// run takes n reads, the link carrying upBps and downBps meanwhile.
func (l *link) run(n int, upBps, downBps float64) {
	for i := 0; i < n; i++ {
		l.now += 100 * ms
		l.upCarry += upBps / 8 / 10
		l.dnCarry += downBps / 8 / 10
		u, d := uint64(l.upCarry), uint64(l.dnCarry)
		l.upCarry -= float64(u)
		l.dnCarry -= float64(d)
		l.tx = (l.tx + u) & l.mask
		l.rx = (l.rx + d) & l.mask
		l.tr.Observe(l.now, l.rx, l.tx)
	}
}

func (l *link) flags() string {
	var f []string
	for _, ev := range l.events {
		if ev.Kind != model.EventCounters || ev.Stream != -1 || ev.Text == "" {
			l.tb.Errorf("malformed event %+v", ev)
		}
		f = append(f, ev.Flags...)
	}
	return strings.Join(f, ",")
}

func near(got, want, frac float64) bool { return math.Abs(got-want) <= frac*want }

func TestWrap32(t *testing.T) {
	l := newLink(t, Config{Name: "eth9", MaxBps: 1e9, UpBps: 100e6, DownBps: 100e6})
	l.mask = 1<<32 - 1
	l.tx = 1<<32 - 3_000_000 // wraps after 0.3 s at 80 Mbit/s
	l.rx = 1<<32 - 30_000
	l.run(40, 80e6, 1e6)
	st := l.tr.Status()
	if st.Wraps < 2 || st.Resets != 0 || st.Jumps != 0 {
		t.Fatalf("wraps %d resets %d jumps %d; want both counters' wraps and nothing else", st.Wraps, st.Resets, st.Jumps)
	}
	if !st.RatesOK || !near(st.UpRate, 80e6, 0.01) || !near(st.DownRate, 1e6, 0.02) {
		t.Errorf("rates across the wrap %.0f / %.0f bit/s; want 80 M / 1 M", st.UpRate, st.DownRate)
	}
	s := l.tr.Samples(0, nil)
	for i := 1; i < len(s); i++ {
		if s[i].TxBytes < s[i-1].TxBytes || s[i].RxBytes < s[i-1].RxBytes || s[i].TimeNs <= s[i-1].TimeNs {
			t.Fatalf("samples not monotonic at %d: %+v then %+v", i, s[i-1], s[i])
		}
	}
	if got := s[len(s)-1].TxBytes - s[0].TxBytes; got != 39*1_000_000 {
		t.Errorf("tx bytes over 39 intervals %d; want %d", got, 39*1_000_000)
	}
	if f := l.flags(); f != "wrap" {
		t.Errorf("events %q; want one wrap event", f)
	}
	if l.tr.Classify(l.now) != model.LoadUp {
		t.Errorf("state %v at 80 of 100 Mbit/s up", l.tr.Classify(l.now))
	}
}

func TestReset(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before uint64
	}{
		{"64-bit", 5_000_000_000}, // above 2^32: any fall is a reset
		{"32-bit mid-range", 3_000_000_000},
		{"small", 2_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLink(t, Config{Name: "eth9", MaxBps: 1e9, UpBps: 10e6, DownBps: 10e6})
			l.tx, l.rx = tc.before, tc.before
			l.run(20, 1e6, 1e6)
			before := l.tr.Samples(0, nil)
			// The driver reloads: both counters start again from zero.
			l.tx, l.rx = 0, 0
			l.run(20, 1e6, 1e6)
			st := l.tr.Status()
			if st.Resets != 1 || st.Wraps != 0 {
				t.Fatalf("resets %d wraps %d; want 1 reset", st.Resets, st.Wraps)
			}
			if f := l.flags(); f != "reset" {
				t.Errorf("events %q; want one reset event", f)
			}
			all := l.tr.Samples(0, nil)
			last := before[len(before)-1]
			after := all[len(before)]
			if d := after.TxBytes - last.TxBytes; d != 12_500 {
				t.Errorf("bytes counted at the reset %d; want the 12500 since it", d)
			}
			if !near(st.UpRate, 1e6, 0.01) {
				t.Errorf("rate after the reset %.0f bit/s; want 1 M", st.UpRate)
			}
		})
	}
}

func TestJumpNotCounted(t *testing.T) {
	l := newLink(t, Config{MaxBps: 100e6, UpBps: 10e6, DownBps: 10e6})
	l.run(20, 1e6, 1e6)
	l.tx += 10_000_000_000 // 10 GB in 100 ms on a 100 Mbit/s port: impossible
	l.run(20, 1e6, 1e6)
	st := l.tr.Status()
	if st.Jumps != 1 || !near(st.UpRate, 1e6, 0.01) {
		t.Errorf("jumps %d, rate %.0f; want 1 jump and the rate unaffected", st.Jumps, st.UpRate)
	}
	if f := l.flags(); f != "jump" {
		t.Errorf("events %q; want one jump event", f)
	}
}

// staleRun feeds n reads of a driver that refreshes every periodReads.
func (l *link) staleRun(n, periodReads int, upBps, downBps float64) {
	for i := 0; i < n; i++ {
		l.now += 100 * ms
		l.upCarry += upBps / 80
		l.dnCarry += downBps / 80
		if (l.now/(100*ms))%int64(periodReads) == 0 {
			u, d := uint64(l.upCarry), uint64(l.dnCarry)
			l.upCarry -= float64(u)
			l.dnCarry -= float64(d)
			l.tx += u
			l.rx += d
		}
		l.tr.Observe(l.now, l.rx, l.tx)
	}
}

func TestStaleDriver(t *testing.T) {
	l := newLink(t, Config{Name: "eth9", UpBps: 10e6, DownBps: 10e6})
	l.run(30, 1e6, 1e6)
	if st := l.tr.Status(); st.Stale || st.Resolution != 100*time.Millisecond {
		t.Fatalf("fresh counters judged stale: %+v", st)
	}
	l.staleRun(80, 10, 9e6, 1e6) // refreshed every 1 s
	st := l.tr.Status()
	if !st.Stale || st.Resolution != time.Second || st.Window != 2*time.Second {
		t.Fatalf("stale driver: stale %v resolution %v window %v; want 1 s and a 2 s window", st.Stale, st.Resolution, st.Window)
	}
	if f := l.flags(); f != "stale" {
		t.Errorf("events %q; want one stale event", f)
	}
	// Over a 2 s window a 1 s driver always shows two refreshes: the label
	// is steady, where a 1 s window would flicker between 0 and 2× the rate.
	for i := 0; i < 30; i++ {
		l.staleRun(1, 10, 9e6, 1e6)
		if s := l.tr.Classify(l.now); s != model.LoadUp {
			st := l.tr.Status()
			t.Fatalf("read %d under a stale driver: %v (up %.0f bit/s)", i, s, st.UpRate)
		}
	}
	// Idle traffic under a stale driver is no evidence either way.
	l.staleRun(50, 10, 10e3, 10e3)
	if st := l.tr.Status(); !st.Stale {
		t.Errorf("light traffic cleared the stale flag")
	}
	l.run(10, 1e6, 1e6)
	st = l.tr.Status()
	if st.Stale || st.Resolution != 100*time.Millisecond {
		t.Errorf("counters fresh again but resolution %v", st.Resolution)
	}
	if f := l.flags(); f != "stale,fresh" {
		t.Errorf("events %q; want stale then fresh", f)
	}
}

// TestBurstyTrafficNotStale: traffic in one burst a second on a fresh
// driver, with the monitor's own probes between the bursts, is not a
// stale driver; nor are bursts without probes at an unsteady period.
func TestBurstyTrafficNotStale(t *testing.T) {
	l := newLink(t, Config{UpBps: 10e6, DownBps: 10e6})
	for i := 0; i < 30; i++ {
		l.run(1, 8e6*10, 0)
		l.run(9, 8e3, 8e3) // probes: ~100 bytes a read
	}
	for i := 0; i < 30; i++ {
		l.run(1, 8e6*10, 0)
		l.run(5+i%7, 0, 0)
	}
	if st := l.tr.Status(); st.Stale {
		t.Errorf("bursty traffic taken for a stale driver: resolution %v", st.Resolution)
	}
}

func TestLoadStates(t *testing.T) {
	l := newLink(t, Config{UpBps: 10e6, DownBps: 50e6})
	if s := l.tr.Classify(base); s != model.LoadUnknown {
		t.Errorf("no samples: %v", s)
	}
	l.run(5, 0, 0)
	if s := l.tr.Classify(l.now); s != model.LoadUnknown {
		t.Errorf("less than a window of samples: %v", s)
	}
	type phase struct {
		reads    int
		up, down float64
		want     model.LoadState
	}
	for i, p := range []phase{
		{30, 100e3, 1e6, model.LoadIdle},
		{50, 9.5e6, 1e6, model.LoadUp},
		{30, 100e3, 1e6, model.LoadIdle},
		{50, 100e3, 48e6, model.LoadDown},
		{50, 9.5e6, 48e6, model.LoadBoth},
		{30, 5e6, 1e6, model.LoadLoaded},    // half the uplink: neither idle nor saturated
		{30, 5e6, 25e6, model.LoadLoaded},   // half of each direction
		{30, 100e3, 25e6, model.LoadLoaded}, // half the downlink, the uplink idle
		{50, 9.5e6, 25e6, model.LoadUp},     // one saturated direction names the state
		{30, 0, 0, model.LoadIdle},
	} {
		l.run(p.reads, p.up, p.down)
		// Mid-phase send times, between reads, as probes are.
		for _, back := range []int64{0, 50, 333} {
			if s := l.tr.Classify(l.now - back*ms); s != p.want {
				t.Errorf("phase %d (%v up, %v down), %d ms before its end: %v; want %v", i, p.up, p.down, back, s, p.want)
			}
		}
	}
	// A send time past the newest sample by more than two reads: the
	// reader has stopped, the state is not known.
	if s := l.tr.Classify(l.now + 250*ms); s != model.LoadUnknown {
		t.Errorf("after the reader stopped: %v", s)
	}
}

// TestDrainHold: the second after an upload ends is still loaded (the
// buffer drains), then idle.
func TestDrainHold(t *testing.T) {
	for _, hold := range []time.Duration{time.Second, 2 * time.Second} {
		l := newLink(t, Config{UpBps: 10e6, DownBps: 10e6, Hold: hold})
		l.run(30, 0, 0)
		l.run(50, 9.5e6, 0)
		end := l.now
		l.run(60, 0, 0)
		for at := int64(0); at <= 500; at += 100 {
			if s := l.tr.Classify(end + at*ms); s != model.LoadUp {
				t.Errorf("hold %v: %d ms after the upload: %v; want still up-saturated", hold, at, s)
			}
		}
		// The 1 s window falls under 0.8 × capacity about 0.2 s after the
		// end; the hold runs from there.
		last := end + 200*ms + int64(hold)
		if s := l.tr.Classify(last - 100*ms); s != model.LoadUp {
			t.Errorf("hold %v: just before the hold ends: %v", hold, s)
		}
		if s := l.tr.Classify(last + 200*ms); s != model.LoadIdle {
			t.Errorf("hold %v: after the hold: %v; want idle", hold, s)
		}
	}
}

func TestLearnCapacity(t *testing.T) {
	l := newLink(t, Config{})
	l.run(30, 10e3, 10e3)
	if st := l.tr.Status(); st.UpBps != 0 || l.tr.Classify(l.now) != model.LoadUnknown {
		t.Fatalf("capacity from idle traffic: %+v", st)
	}
	// A 2 s burst at 50 Mbit/s is not sustained; 6 s at 20 Mbit/s is.
	l.run(20, 50e6, 0)
	l.run(20, 10e3, 10e3)
	l.run(60, 20e6, 30e6)
	st := l.tr.Status()
	if !st.UpLearnt || !st.DownLearnt || !near(st.UpBps, 20e6, 0.02) || !near(st.DownBps, 30e6, 0.02) {
		t.Fatalf("learnt %.0f / %.0f (learnt %v %v); want 20 M / 30 M", st.UpBps, st.DownBps, st.UpLearnt, st.DownLearnt)
	}
	if s := l.tr.Classify(l.now); s != model.LoadBoth {
		t.Errorf("at the learnt capacity: %v", s)
	}
	l.run(30, 10e3, 10e3)
	if s := l.tr.Classify(l.now); s != model.LoadIdle {
		t.Errorf("idle after learning: %v", s)
	}
	// The far side's measurement replaces it.
	if err := l.tr.SetCapacity(40e6, 0); err != nil {
		t.Fatal(err)
	}
	l.run(30, 20e6, 10e3)
	if st := l.tr.Status(); st.UpLearnt || st.UpBps != 40e6 || l.tr.Classify(l.now) != model.LoadLoaded || st.Up != DirLoaded || st.Down != DirIdle {
		t.Errorf("after SetCapacity(40 M): %+v, %v; want 20 M of 40 M (up loaded, down idle: loaded)", st, l.tr.Classify(l.now))
	}
	if err := l.tr.SetCapacity(-1, 0); err == nil {
		t.Error("negative capacity accepted")
	}
}

func TestTxIsDown(t *testing.T) {
	l := newLink(t, Config{UpBps: 10e6, DownBps: 10e6, TxIsDown: true})
	l.run(30, 9e6, 0) // tx: toward the LAN
	if s := l.tr.Classify(l.now); s != model.LoadDown {
		t.Errorf("tx on a LAN-side interface: %v; want down-saturated", s)
	}
}

func TestGapAndClockStep(t *testing.T) {
	l := newLink(t, Config{UpBps: 10e6, DownBps: 10e6})
	l.run(30, 9e6, 0)
	l.now += int64(3 * time.Second) // the reader stalled for 3 s
	l.run(5, 9e6, 0)
	if s := l.tr.Classify(l.now); s != model.LoadUnknown {
		t.Errorf("half a window after a 3 s gap: %v", s)
	}
	l.run(10, 9e6, 0)
	if s := l.tr.Classify(l.now); s != model.LoadUp {
		t.Errorf("a window after the gap: %v", s)
	}
	l.now -= int64(time.Minute) // the wall clock stepped back
	l.run(20, 9e6, 0)
	s := l.tr.Samples(0, nil)
	for i := 1; i < len(s); i++ {
		if s[i].TimeNs <= s[i-1].TimeNs {
			t.Fatalf("samples out of order after a clock step")
		}
	}
	if st := l.tr.Status(); st.Resets+st.Jumps != 0 || l.tr.Classify(l.now) != model.LoadUp {
		t.Errorf("after a clock step: %+v", st)
	}
}

func TestRingKeepsSpan(t *testing.T) {
	l := newLink(t, Config{Keep: 5 * time.Second, UpBps: 10e6, DownBps: 10e6})
	l.run(200, 1e6, 1e6)
	s := l.tr.Samples(0, nil)
	if len(s) != 51 || s[len(s)-1].TimeNs != l.now {
		t.Errorf("%d samples kept, newest %d; want 51 ending at %d", len(s), s[len(s)-1].TimeNs, l.now)
	}
	if got := l.tr.Samples(l.now-300*ms, nil); len(got) != 3 {
		t.Errorf("samples after a time: %d; want 3", len(got))
	}
}

func TestConfigBounds(t *testing.T) {
	for _, c := range []Config{
		{Interval: time.Millisecond},
		{Window: time.Hour},
		{Window: 50 * time.Millisecond},
		{Hold: -time.Second},
		{Low: 0.9, High: 0.8},
		{High: 1.5},
		{UpBps: -1},
		{DownBps: math.NaN()},
		{UpBps: math.Inf(1)},
		{MaxBps: 1},
		{Keep: 48 * time.Hour},
		{Keep: 24 * time.Hour, Interval: 10 * time.Millisecond},
		{Sustain: 2 * time.Minute},
	} {
		if _, err := NewTracker(c); err == nil {
			t.Errorf("config %+v accepted", c)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
}

// TestConcurrentReaders runs the writer against readers (go test -race).
func TestConcurrentReaders(t *testing.T) {
	l := newLink(t, Config{Keep: 5 * time.Second, UpBps: 10e6, DownBps: 10e6})
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []model.CounterSample
			for i := 0; i < 100_000; i++ {
				select {
				case <-done:
					return
				default:
				}
				l.tr.Classify(base + int64(i%2000)*100*ms)
				if i%100 == 0 {
					buf = l.tr.Samples(0, buf[:0])
					_ = l.tr.Status()
				}
			}
		}()
	}
	l.run(2000, 9e6, 1e6)
	close(done)
	wg.Wait()
}

func TestClassifyAllocs(t *testing.T) {
	l := newLink(t, Config{UpBps: 10e6, DownBps: 10e6})
	l.run(6000, 9e6, 1e6)
	if a := testing.AllocsPerRun(1000, func() { l.tr.Classify(l.now - 12345*ms) }); a != 0 {
		t.Errorf("Classify allocates %v times per call", a)
	}
	if a := testing.AllocsPerRun(100, func() { l.run(1, 9e6, 1e6) }); a != 0 {
		t.Errorf("Observe allocates %v times per reading without events", a)
	}
}

// BenchmarkClassify: a full 10-minute ring (6000 samples), send times
// spread over it.
func BenchmarkClassify(b *testing.B) {
	l := newLink(b, Config{UpBps: 10e6, DownBps: 10e6})
	l.run(6000, 9e6, 1e6)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l.tr.Classify(l.now - int64(i%6000)*100*ms - 37*ms)
	}
}

// BenchmarkObserve: one reading folded in (the writer's cost per 100 ms).
func BenchmarkObserve(b *testing.B) {
	l := newLink(b, Config{UpBps: 10e6, DownBps: 10e6})
	l.run(6000, 9e6, 1e6)
	b.ReportAllocs()
	b.ResetTimer()
	l.run(b.N, 9e6, 1e6)
}
