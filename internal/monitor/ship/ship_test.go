package ship

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/store/pgtest"
)

var testStreams = []model.MonitorStream{
	{Name: "a/stamp", Target: "198.18.0.1:862", Kind: model.ProbeSTAMP},
	{Name: "b/icmp", Target: "198.18.0.2", Kind: model.ProbeICMP},
}

// local is a monitor's own store with its rows: minutes of probes at 2/s
// per stream, their rollups, events, restarts and capacities, ending
// about now (the fleet store checks times against its clock).
type local struct {
	st   store.Store
	mid  int64
	base int64 // the first minute
}

func newLocal(t testing.TB, name string) *local {
	t.Helper()
	return newLocalAt(t, name, filepath.Join(t.TempDir(), "monitor.db"))
}

// newLocalAt is newLocal on the store at url (a journal: the small box's).
func newLocalAt(t testing.TB, name, url string) *local {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mid, err := st.Monitor(ctx, store.Identity{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Streams(ctx, mid, testStreams); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixNano()
	return &local{st: st, mid: mid, base: now - now%int64(time.Minute) - 3*int64(time.Hour)}
}

// add writes minutes [from, to) of rows (minutes after base).
func (l *local) add(t testing.TB, from, to int) {
	t.Helper()
	ctx := context.Background()
	for m := from; m < to; m++ {
		start := l.base + int64(m)*int64(time.Minute)
		var b store.Batch
		for st := range int32(2) {
			for i := range 120 {
				p := model.ProbeSample{Stream: st, Seq: uint32(m*120 + i), SentNs: start + int64(i)*int64(500*time.Millisecond), RTTNs: 20e6 + int64(i)}
				if i%17 == 3 {
					p.Lost, p.RTTNs = true, -1
				}
				b.Probes = append(b.Probes, p)
			}
			b.Rollups = append(b.Rollups, store.Rollup{Stream: st, MinuteNs: start, Sent: 120, Lost: 7, SumNs: 2.4e9, MinNs: 20e6, MaxNs: 21e6, Data: []byte(`{"bins":[]}`)})
		}
		b.Counters = append(b.Counters, model.CounterSample{TimeNs: start, RxBytes: uint64(m) << 20, TxBytes: uint64(m) << 10})
		if m%40 == 7 {
			b.Events = append(b.Events, model.MonitorEvent{Kind: model.EventOutage, StartNs: start, EndNs: start + 30e9, Stream: int32(m % 2),
				Text: fmt.Sprintf("outage %d", m), Detail: map[string]float64{"lost": 60}, Flags: []string{"stream"}})
		}
		if err := l.st.Write(ctx, l.mid, &b); err != nil {
			t.Fatal(err)
		}
		if m%60 == 0 {
			if err := l.st.Restart(ctx, l.mid, store.RestartRow{TimeNs: start, LastNs: start - 1e9, Version: "test"}); err != nil {
				t.Fatal(err)
			}
			if err := l.st.SetCapacity(ctx, l.mid, store.CapacityRow{FromNs: start, UpBps: 20e6 + float64(m), DownBps: 100e6, UpSource: store.CapacityConfigured, DownSource: store.CapacityConfigured}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// counts are the rows of one monitor in a store, by table.
type counts struct {
	Probes, Counters, Rollups, Events, Restarts, Capacities int
}

func countRows(t *testing.T, st store.Store, mid int64) counts {
	t.Helper()
	ctx := context.Background()
	var c counts
	all := int64(math.MaxInt64)
	if err := st.Probes(ctx, mid, 0, all, func(model.ProbeSample) error { c.Probes++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Counters(ctx, mid, 0, all, func(model.CounterSample) error { c.Counters++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Rollups(ctx, mid, 0, all, func(store.Rollup) error { c.Rollups++; return nil }); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(ctx, mid, 0, all, store.MaxListLimit)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := st.Restarts(ctx, mid, 0, all)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := st.Capacities(ctx, mid, 0, all)
	if err != nil {
		t.Fatal(err)
	}
	c.Events, c.Restarts, c.Capacities = len(evs), len(rs), len(cs)
	return c
}

// fleet is a fleet store on a throw-away PostgreSQL with one monitor
// enrolled.
type fleet struct {
	pg    *pgtest.Server
	url   string
	st    store.Store
	token string
}

func newFleet(t testing.TB, name string) *fleet {
	t.Helper()
	pg := pgtest.Start(t)
	url := pg.NewDB(t)
	st, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	token, err := st.AddMonitor(context.Background(), store.Identity{Name: name, Labels: map[string]string{"isp": "example"}}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	return &fleet{pg: pg, url: url, st: st, token: token}
}

func (f *fleet) monitorID(t *testing.T, name string) int64 {
	t.Helper()
	ms, err := f.st.ListMonitors(context.Background())
	if err != nil {
		// Right after a restart of the database (TestShipStoreDown) a
		// pooled connection idle for under a second is not pinged by
		// pgx before reuse: its first query reports the termination
		// (57P01) and the pool drops it. The shipper retries the same
		// way; a second failure is real.
		ms, err = f.st.ListMonitors(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	return ms[name]
}

func newShipper(t testing.TB, l *local, cfg Config) *Shipper {
	t.Helper()
	cfg.Monitor = l.mid
	if cfg.Name == "" {
		cfg.Name = "home"
	}
	s, err := New(context.Background(), l.st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.sink != nil {
			s.sink.Close()
		}
	})
	return s
}

// drain runs passes until one leaves nothing behind (bounded).
func drain(t *testing.T, s *Shipper) {
	t.Helper()
	for range 100 {
		more, err := s.Pass(context.Background())
		if err != nil {
			t.Fatalf("pass: %v", err)
		}
		if !more {
			return
		}
	}
	t.Fatal("100 passes and rows still pending")
}

func pending(s *Shipper) int64 {
	var n int64
	for _, ts := range s.Status().Tables {
		n += ts.PendingRows
	}
	return n
}

// TestShip: everything local reaches the fleet store, equal; a pass
// after it ships nothing; the lag is zero when caught up. The local store
// is SQLite or a journal (the monitor build's).
func TestShip(t *testing.T) {
	for _, local := range []string{"sqlite", "journal"} {
		t.Run(local, func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "monitor.db")
			if local == "journal" {
				url = "journal:" + filepath.Join(t.TempDir(), "journal")
			}
			testShip(t, newLocalAt(t, "home", url))
		})
	}
}

func testShip(t *testing.T, l *local) {
	f := newFleet(t, "home")
	l.add(t, 0, 150)
	s := newShipper(t, l, Config{URL: f.url, Token: f.token, Raw: true, MaxRows: 3000})
	drain(t, s)
	want := countRows(t, l.st, l.mid)
	fid := f.monitorID(t, "home")
	if got := countRows(t, f.st, fid); got != want {
		t.Fatalf("fleet has %+v, local %+v", got, want)
	}
	if want.Probes != 150*240 || want.Events != 4 || want.Restarts != 3 {
		t.Fatalf("local rows %+v: the generator changed?", want)
	}
	// Equal rows, not just as many: the rollups and events read back.
	ctx := context.Background()
	var lr, fr []store.Rollup
	_ = l.st.Rollups(ctx, l.mid, 0, math.MaxInt64, func(r store.Rollup) error { r.Stream = 0; lr = append(lr, r); return nil })
	_ = f.st.Rollups(ctx, fid, 0, math.MaxInt64, func(r store.Rollup) error { r.Stream = 0; fr = append(fr, r); return nil })
	if !reflect.DeepEqual(lr, fr) {
		t.Errorf("rollups differ")
	}
	le, _ := l.st.Events(ctx, l.mid, 0, math.MaxInt64, 100)
	fe, _ := f.st.Events(ctx, fid, 0, math.MaxInt64, 100)
	for i := range le {
		le[i].Stream, fe[i].Stream = 0, 0
	}
	if !reflect.DeepEqual(le, fe) {
		t.Errorf("events differ:\n%+v\n%+v", le, fe)
	}
	if p := pending(s); p != 0 || !s.Status().Healthy {
		t.Errorf("caught up: %d rows pending, status %+v", p, s.Status())
	}
	// More rows ship on the next pass; nothing is sent twice.
	l.add(t, 150, 160)
	drain(t, s)
	if got, want := countRows(t, f.st, fid), countRows(t, l.st, l.mid); got != want {
		t.Fatalf("after more rows: fleet %+v, local %+v", got, want)
	}
}

// crashSink commits a shipment in the fleet store, then fails as a
// shipper killed before it recorded the watermark would.
type crashSink struct {
	Sink
	after   int // shipments that go through before the crash
	n       int
	crashed atomic.Bool
}

var errCrash = errors.New("killed after the store committed")

func (c *crashSink) Accept(ctx context.Context, b *store.Shipment) error {
	if err := c.Sink.Accept(ctx, b); err != nil {
		return err
	}
	if c.n++; c.n > c.after {
		c.crashed.Store(true)
		return errCrash
	}
	return nil
}

// TestShipCrash: a shipper killed between the fleet store's commit and
// the local watermark, at several points, and one cancelled mid-pass:
// started again, it ships the rest, and nothing is lost or doubled.
func TestShipCrash(t *testing.T) {
	f := newFleet(t, "home")
	l := newLocal(t, "home")
	l.add(t, 0, 130)
	for _, after := range []int{0, 1, 3, 6} {
		cs := &crashSink{after: after}
		s := newShipper(t, l, Config{URL: f.url, Token: f.token, Raw: true, MaxRows: 2000,
			Open: func(ctx context.Context) (Sink, error) {
				st, err := store.Open(ctx, f.url, store.Options{})
				cs.Sink = st
				return cs, err
			}})
		if _, err := s.Pass(context.Background()); !errors.Is(err, errCrash) {
			t.Fatalf("crash after %d shipments: pass returned %v", after, err)
		}
		l.add(t, 130+after, 131+after)
	}
	// Cancelled while shipping: the shipment in flight is either stored
	// whole or not at all.
	ctx, cancel := context.WithCancel(context.Background())
	s := newShipper(t, l, Config{URL: f.url, Token: f.token, Raw: true, MaxRows: 2000,
		Open: func(octx context.Context) (Sink, error) {
			st, err := store.Open(octx, f.url, store.Options{})
			return &cancelSink{Sink: st, cancel: cancel}, err
		}})
	if _, err := s.Pass(ctx); err == nil {
		t.Fatal("cancelled pass: no error")
	}
	// Started again: everything, once.
	s = newShipper(t, l, Config{URL: f.url, Token: f.token, Raw: true, MaxRows: 2000})
	drain(t, s)
	want := countRows(t, l.st, l.mid)
	if got := countRows(t, f.st, f.monitorID(t, "home")); got != want {
		t.Fatalf("after crashes: fleet %+v, local %+v", got, want)
	}
}

// cancelSink cancels the pass's context as a shipment is sent.
type cancelSink struct {
	Sink
	cancel func()
	n      int
}

func (c *cancelSink) Accept(ctx context.Context, b *store.Shipment) error {
	if c.n++; c.n == 3 {
		c.cancel()
	}
	return c.Sink.Accept(ctx, b)
}

// TestShipStoreDown: the fleet's database stops; passes fail with one
// line, the rows stay local (retention keeps what is not confirmed even
// past its age), the lag grows; the database comes back and the backlog
// ships, nothing lost.
func TestShipStoreDown(t *testing.T) {
	f := newFleet(t, "home")
	l := newLocal(t, "home")
	l.add(t, 0, 60)
	var logs strings.Builder
	s := newShipper(t, l, Config{URL: f.url, Token: f.token, Raw: true})
	s.cfg.Log = newLog(&logs)
	drain(t, s)
	f.pg.Stop(t)
	l.add(t, 60, 150)
	for range 2 {
		if _, err := s.Pass(context.Background()); err == nil {
			t.Fatal("pass with the database stopped: no error")
		}
	}
	st := s.Status()
	if st.Healthy || st.LastError == "" || strings.Contains(st.LastError, "\n") || pending(s) < 90*240 {
		t.Fatalf("while down: %+v", st)
	}
	var lag float64
	for _, ts := range st.Tables {
		lag = max(lag, ts.LagSeconds)
	}
	if lag < 60 {
		t.Errorf("while down: lag %.0f s, want over a minute", lag)
	}
	// Retention of an hour (raw) and a day (rollups): of the rows over an
	// hour old, those shipped before the stop go, the rest stay.
	g := s.Guard(l.st)
	now := l.base + int64(3*time.Hour)
	before := countRows(t, l.st, l.mid)
	d, err := g.Retain(context.Background(), store.Retention{Raw: time.Hour, Rollups: 24 * time.Hour, Batch: 1000}, now)
	if err != nil {
		t.Fatal(err)
	}
	after := countRows(t, l.st, l.mid)
	if d.Probes != 60*240 || after.Probes != 90*240 || d.Rollups != 0 {
		t.Errorf("retention while down deleted %+v (local %+v → %+v): want the 60 shipped minutes of raw rows only", d, before, after)
	}
	f.pg.Resume(t)
	drain(t, s)
	fid := f.monitorID(t, "home")
	got := countRows(t, f.st, fid)
	if got.Probes != 150*240 || got.Rollups != 300 || got.Counters != 150 {
		t.Fatalf("after the database came back: fleet %+v", got)
	}
	if pending(s) != 0 {
		t.Errorf("pending after the backlog shipped: %+v", s.Status().Tables)
	}
}

// TestShipRefused: an unknown monitor, a wrong token, a revoked monitor,
// a second monitor under a bound name and a clock far off are refused
// with a reason, and nothing local is deleted meanwhile.
func TestShipRefused(t *testing.T) {
	f := newFleet(t, "home")
	ctx := context.Background()
	l := newLocal(t, "home")
	l.add(t, 0, 10)
	refusedWith := func(s *Shipper, want string) {
		t.Helper()
		_, err := s.Pass(ctx)
		if !errors.Is(err, store.ErrRefused) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("pass: %v; want refused, %q, one line", err, want)
		}
	}
	refusedWith(newShipper(t, l, Config{URL: f.url, Name: "stranger", Token: f.token}), "not enrolled")
	refusedWith(newShipper(t, l, Config{URL: f.url, Token: "sonde_wrong"}), "wrong token")
	refusedWith(newShipper(t, l, Config{URL: f.url}), "needs its token")
	if got := countRows(t, f.st, f.monitorID(t, "home")); got != (counts{}) {
		t.Fatalf("refused shipments stored rows: %+v", got)
	}

	// The first instance binds the name; a second monitor (its own
	// store, its own instance ID) under it is refused.
	s := newShipper(t, l, Config{URL: f.url, Token: f.token})
	drain(t, s)
	other := newLocal(t, "home")
	other.add(t, 0, 5)
	refusedWith(newShipper(t, other, Config{URL: f.url, Token: f.token}), "two monitors with the same name are refused")

	// Revoked: refused, and the local rows are kept past their age.
	if err := f.st.RevokeMonitor(ctx, "home"); err != nil {
		t.Fatal(err)
	}
	l.add(t, 10, 20)
	refusedWith(s, "revoked")
	d, err := s.Guard(l.st).Retain(ctx, store.Retention{Rollups: 24 * time.Hour, Batch: 100}, time.Now().UnixNano()+int64(30*time.Hour))
	if err != nil || d.Rollups != 20 {
		t.Errorf("retention with a revoked monitor deleted %+v (%v): want the 20 rollups shipped before, none after", d, err)
	}
	if n := countRows(t, l.st, l.mid).Rollups; n != 20 {
		t.Errorf("local rollups after retention: %d, want the 20 never confirmed", n)
	}

	// Enrolled again (a new machine): a new token, this instance binds.
	token, err := f.st.AddMonitor(ctx, store.Identity{Name: "home"}, false, true)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.Token = token
	drain(t, s)

	// A clock an hour ahead: refused with the reason, never shifted.
	skew := newLocal(t, "skewed")
	if _, err := f.st.AddMonitor(ctx, store.Identity{Name: "skewed"}, true, false); err != nil {
		t.Fatal(err)
	}
	skew.base += int64(4 * time.Hour)
	skew.add(t, 0, 2)
	ss := newShipper(t, skew, Config{URL: f.url, Name: "skewed", Now: func() int64 { return time.Now().UnixNano() + int64(5*time.Hour) }})
	refusedWith(ss, "ahead of the store's clock")
	if got := countRows(t, f.st, f.monitorID(t, "skewed")); got != (counts{}) {
		t.Errorf("rows of a clock far off stored: %+v", got)
	}
}

func newLog(w io.Writer) *log.Logger { return log.New(w, "", 0) }

// TestHardCap: rows the fleet store never confirmed are kept past their
// age up to twice it; what the cap then deletes is counted and recorded
// as a storage event.
func TestHardCap(t *testing.T) {
	l := newLocal(t, "home")
	l.add(t, 0, 120) // two hours of rows, none shipped
	s := newShipper(t, l, Config{URL: filepath.Join(t.TempDir(), "unreachable", "fleet.db"), Raw: true})
	if _, err := s.Pass(context.Background()); err == nil {
		t.Fatal("pass to a store that cannot open: no error")
	}
	g := s.Guard(l.st)
	ctx := context.Background()
	// An hour's age, now 2 h 30 min after the first row: everything is
	// over an hour old, the first 30 minutes over two hours.
	now := l.base + int64(150*time.Minute)
	d, err := g.Retain(ctx, store.Retention{Raw: time.Hour, Rollups: time.Hour, Batch: 500}, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Probes != 30*240 || d.Rollups != 30*2 || d.Counters != 30 {
		t.Errorf("deleted %+v: want the 30 minutes past twice the age", d)
	}
	if got := s.Status().UnshippedDeleted; got != 30*240+60+30 {
		t.Errorf("unshipped deleted: %d", got)
	}
	evs, err := l.st.Events(ctx, l.mid, now-1, now+1, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != model.EventStorage || !strings.Contains(evs[0].Text, "never confirmed") {
		t.Errorf("loss event: %+v, %v", evs, err)
	}
}
