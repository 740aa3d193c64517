package store

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store/pgtest"
)

// TestFleetConformance runs the fleet's cases against both engines, as
// TestConformance does.
func TestFleetConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fresh := b.start(t)
			t.Run("fleet", func(t *testing.T) {
				skipRowsOnly(t, b, "fleet")
				testFleet(t, fresh(t))
			})
			t.Run("ship-marks", func(t *testing.T) { testShipMarks(t, fresh(t)) })
		})
	}
}

// testFleet: enrolling, revoking and listing monitors, and Accept's
// refusals, on both engines (a fleet store is PostgreSQL in practice; the
// calls behave the same on SQLite).
func testFleet(t *testing.T, url string) {
	ctx := context.Background()
	s := open(t, url, Options{})
	token, err := s.AddMonitor(ctx, Identity{Name: "home", Labels: map[string]string{"isp": "x"}}, false, false)
	if err != nil || !strings.HasPrefix(token, "sonde_") || len(token) < 40 {
		t.Fatalf("AddMonitor: %q, %v", token, err)
	}
	if _, err := s.AddMonitor(ctx, Identity{Name: "home"}, false, false); !errors.Is(err, ErrMonitorExists) {
		t.Errorf("second add: %v, want ErrMonitorExists", err)
	}
	// A monitor a daemon registered itself is enrolled in place.
	if _, err := s.Monitor(ctx, Identity{Name: "direct"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMonitor(ctx, Identity{Name: "direct"}, true, false); err != nil {
		t.Errorf("enroll a registered monitor: %v", err)
	}
	now := time.Now().UnixNano()
	ship := func(name, token, instance string, at int64) error {
		return s.Accept(ctx, &Shipment{Monitor: name, Token: token, Instance: instance, Streams: testStreams,
			Batch:    Batch{Rollups: []Rollup{{Stream: 1, MinuteNs: at, Sent: 600, Data: []byte(`{}`)}}, Events: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: at, EndNs: at + 1e9, Stream: 0, Text: "x"}}},
			Restarts: []RestartRow{{TimeNs: at, Version: "t"}}, Capacities: []CapacityRow{{FromNs: at, UpBps: 1e6}}})
	}
	for _, c := range []struct {
		name, token, instance string
		at                    int64
		want                  string
	}{
		{"nobody", token, "i1", now, "not enrolled"},
		{"home", "", "i1", now, "needs its token"},
		{"home", token + "x", "i1", now, "wrong token"},
		{"home", token, "i1", now + int64(11*time.Minute), "ahead of the store's clock"},
		{"home", token, "i1", 1e9, "before 2000"},
	} {
		if err := ship(c.name, c.token, c.instance, c.at); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s/%s: %v, want refused: %s", c.name, c.instance, err, c.want)
		}
	}
	// Twice the same shipment: stored once.
	for range 2 {
		if err := ship("home", token, "i1", now); err != nil {
			t.Fatal(err)
		}
	}
	mid := mustMonitorID(t, s, "home")
	if evs, _ := s.Events(ctx, mid, 0, 1<<62, 10); len(evs) != 1 {
		t.Errorf("events after a replayed shipment: %d, want 1", len(evs))
	}
	if err := ship("home", token, "i2", now); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "same name") {
		t.Errorf("second instance: %v", err)
	}
	if err := s.RevokeMonitor(ctx, "home"); err != nil {
		t.Fatal(err)
	}
	if err := ship("home", token, "i1", now); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("revoked: %v", err)
	}
	if err := s.RevokeMonitor(ctx, "nobody"); !errors.Is(err, ErrNoMonitor) {
		t.Errorf("revoke unknown: %v", err)
	}
	ms, err := s.FleetMonitors(ctx)
	if err != nil || len(ms) != 2 || ms[1].Name != "home" || !ms[1].Revoked || !ms[1].Token || ms[1].Instance != "i1" || ms[1].Labels["isp"] != "x" || ms[0].Token {
		t.Errorf("FleetMonitors: %+v, %v", ms, err)
	}
	// Replaced: a new token, another instance may bind.
	token2, err := s.AddMonitor(ctx, Identity{Name: "home"}, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := ship("home", token, "i2", now); err == nil {
		t.Error("the old token still works after --replace")
	}
	if err := ship("home", token2, "i2", now+60e9); err != nil {
		t.Errorf("replaced monitor: %v", err)
	}
}

func mustMonitorID(t *testing.T, s Store, name string) int64 {
	t.Helper()
	ms, err := s.ListMonitors(context.Background())
	if err != nil || ms[name] == 0 {
		t.Fatalf("monitor %q: %v", name, err)
	}
	return ms[name]
}

// testShipMarks: the local side: an instance ID kept, watermarks, the
// next row and counts past a mark, events by ID.
func testShipMarks(t *testing.T, url string) {
	ctx := context.Background()
	s := open(t, url, Options{})
	id1, err := s.InstanceID(ctx)
	if err != nil || len(id1) != 32 {
		t.Fatalf("InstanceID: %q, %v", id1, err)
	}
	if id2, _ := s.InstanceID(ctx); id2 != id1 {
		t.Errorf("InstanceID changed: %q then %q", id1, id2)
	}
	mid, _ := monitor(t, s, "m")
	b := &Batch{Probes: probes(30, 0, t0), Rollups: []Rollup{{Stream: 0, MinuteNs: t0, Data: []byte(`{}`)}, {Stream: 1, MinuteNs: t0 + 60e9, Data: []byte(`{}`)}},
		Events: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: t0, EndNs: t0, Stream: -1}, {Kind: model.EventOutage, StartNs: t0 - 5, EndNs: t0, Stream: -1}}}
	if err := s.Write(ctx, mid, b); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ShipMark(ctx, "d", mid, TableRollups); ok || err != nil {
		t.Errorf("mark before any: %v, %v", ok, err)
	}
	if err := s.SetShipMark(ctx, "d", mid, TableRollups, t0); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := s.ShipMark(ctx, "d", mid, TableRollups); !ok || v != t0 {
		t.Errorf("mark: %d, %v", v, ok)
	}
	if v, ok, _ := s.NextAfter(ctx, mid, TableRollups, t0); !ok || v != t0+60e9 {
		t.Errorf("next rollup after the mark: %d, %v", v, ok)
	}
	if n, _ := s.CountAfter(ctx, mid, TableProbes, t0+1, 1000); n != 29 {
		t.Errorf("probes after the first: %d, want 29", n)
	}
	if n, _ := s.CountAfter(ctx, mid, TableProbes, 0, 10); n != 10 {
		t.Errorf("count up to a limit: %d, want 10", n)
	}
	evs, err := s.EventsAfter(ctx, mid, 0, 10)
	if err != nil || len(evs) != 2 || evs[0].ID >= evs[1].ID || evs[1].Event.StartNs != t0-5 {
		t.Errorf("EventsAfter: %+v, %v", evs, err)
	}
	// Retention keeps what a hold names, whatever its age.
	d, err := s.Retain(ctx, Retention{Raw: time.Hour, Rollups: time.Hour, Events: time.Hour, Hold: &Hold{Probes: t0 + 10*100e6, Counters: 1 << 62, Rollups: t0 + 1, Restarts: 0, EventID: evs[0].ID}}, t0+int64(24*time.Hour))
	if err != nil || d != (Deleted{Probes: 10, Rollups: 1, Events: 1}) {
		t.Errorf("retention with a hold: %+v, %v", d, err)
	}
}

// TestPartitions: on PostgreSQL, a store of schema 2 with rows migrates
// to day partitions keeping every row; writes create the partitions they
// need, migrate creates the coming days', and retention drops whole days.
func TestPartitions(t *testing.T) {
	skipWithoutPostgres(t)
	pg := pgtest.Start(t)
	url := pg.NewDatabase(t)
	ctx := context.Background()
	loc, _ := ParseURL(url)
	db, err := openDB(loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Schema 2 only, then rows, as a store of the previous sonde.
	fsys, err := migrations(Postgres)
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	for _, n := range []string{"00001_initial.sql", "00002_capacities.sql"} {
		data, _ := fs.ReadFile(fsys, n)
		old[n] = &fstest.MapFile{Data: data}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, old, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	day := int64(24 * time.Hour)
	mustExec(t, db, `INSERT INTO monitors (name, labels, created_ns) VALUES ('m', '{}', 0)`)
	mustExec(t, db, `INSERT INTO streams (monitor_id, name, target, kind, dscp) VALUES (1, 's', 't', 'stamp', 0)`)
	for d := range int64(3) {
		mustExec(t, db, `INSERT INTO probes VALUES (1, $1, 0, 0, 1, 0, 0, 0, 0)`, t0+d*day)
		mustExec(t, db, `INSERT INTO rollups VALUES (1, $1, 1, 0, 0, 0, 0, 0, 0, '')`, t0+d*day)
		mustExec(t, db, `INSERT INTO counters VALUES (1, $1, 0, 0)`, t0+d*day)
		for range 2 { // a duplicate the natural key removes
			mustExec(t, db, `INSERT INTO events (monitor_id, kind, start_ns, end_ns, stream_id, text, detail, flags) VALUES (1, 'outage', $1, $1, -1, '', 'null', 'null')`, t0+d*day)
		}
	}
	s := open(t, url, Options{})
	parts := func(table string) int {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = $1`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, table := range []string{"probes", "rollups", "counters", "events"} {
		if n := parts(table); n != 3 {
			t.Errorf("%s: %d partitions after the migration, want 3 (one per day of rows)", table, n)
		}
	}
	var n int
	if _ = s.Probes(ctx, 1, 0, 1<<62, func(model.ProbeSample) error { n++; return nil }); n != 3 {
		t.Errorf("probes after the migration: %d, want 3", n)
	}
	if evs, _ := s.Events(ctx, 1, 0, 1<<62, 10); len(evs) != 3 {
		t.Errorf("events after the migration: %d, want 3 (duplicates removed)", len(evs))
	}
	// A write on a new day creates its partition; migrate creates the
	// coming days'.
	if _, err := s.Streams(ctx, 1, []model.MonitorStream{{Name: "s", Target: "t", Kind: "stamp"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, 1, &Batch{Probes: []model.ProbeSample{{SentNs: t0 + 10*day}}, Events: []model.MonitorEvent{{Kind: "outage", StartNs: t0 + 10*day, Stream: -1}}}); err != nil {
		t.Fatal(err)
	}
	if n := parts("probes"); n != 4 {
		t.Errorf("probes: %d partitions after a write on a new day, want 4", n)
	}
	if _, err := Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	if n := parts("rollups"); n < 3+AheadDays {
		t.Errorf("rollups: %d partitions after migrate, want the coming %d days too", n, AheadDays)
	}
	// Retention: days 0 and 1 wholly older than the cut are dropped.
	d, err := s.Retain(ctx, Retention{Raw: 8 * 24 * time.Hour, Batch: 10}, t0+10*day)
	if err != nil || d.Probes != 2 || d.Counters != 2 {
		t.Errorf("retention: %+v, %v; want 2 probes, 2 counter samples", d, err)
	}
	for d, want := range map[int64]bool{0: false, 1: false, 2: true, 10: true} {
		var exists bool
		if err := db.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, partitionName("probes", t0/dayNs+d)).Scan(&exists); err != nil || exists != want {
			t.Errorf("probes partition of day %d: exists %v, want %v (%v)", d, exists, want, err)
		}
	}
	// A partition dropped behind the store's back: the write creates it again.
	mustExec(t, db, `DROP TABLE `+partitionName("probes", t0/dayNs+10))
	if err := s.Write(ctx, 1, &Batch{Probes: []model.ProbeSample{{SentNs: t0 + 10*day + 1}}}); err != nil {
		t.Errorf("write after a partition was dropped elsewhere: %v", err)
	}
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestParseLabels(t *testing.T) {
	l, err := ParseLabels([]string{"isp=example", "region=eu-west", "empty="})
	if err != nil || len(l) != 3 || l["isp"] != "example" || l["empty"] != "" {
		t.Fatalf("ParseLabels: %v, %v", l, err)
	}
	for _, bad := range [][]string{{"novalue"}, {"=v"}, {"a=1", "a=2"}, {"k\x00=v"}, {" k=v"}, {strings.Repeat("k", 300) + "=v"}, make([]string, MaxLabels+1)} {
		if _, err := ParseLabels(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseLabels(%.60q): %v, want one line", bad, err)
		}
	}
}

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"isp=example", "a=b=c", "=", "", "k=\xff", "k =v"} {
		f.Add(s, "region=eu")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		l, err := ParseLabels([]string{a, b})
		if err != nil {
			return
		}
		if checkIdentity(Identity{Name: "m", Labels: l}) != nil {
			t.Fatalf("labels %q %q parsed but the store refuses them", a, b)
		}
	})
}

// FuzzAccept: a shipment of any name, token, instance, stream and times
// is stored or refused with ErrRefused or ErrBadInput, never half.
func FuzzAccept(f *testing.F) {
	now := time.Now().UnixNano()
	f.Add("home", "", "i1", "s", int64(0), int32(0), now)
	f.Add("home", "sonde_x", "", "", int64(-1), int32(5), now+int64(time.Hour))
	f.Add("", "t", "i\x00", "s\n", int64(1<<62), int32(-1), int64(0))
	// A file: an in-memory store has one connection, which a write's
	// prepared statements wait on until the context ends.
	s, err := Open(context.Background(), filepath.Join(f.TempDir(), "fleet.db"), Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddMonitor(context.Background(), Identity{Name: "home"}, true, false); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, token, instance, stream string, dt int64, idx int32, at int64) {
		sh := &Shipment{Monitor: name, Token: token, Instance: instance,
			Streams: []model.MonitorStream{{Name: stream, Target: "198.18.0.1", Kind: model.ProbeSTAMP}},
			Batch: Batch{Rollups: []Rollup{{Stream: idx, MinuteNs: at, Data: []byte(`{}`)}}, Probes: []model.ProbeSample{{Stream: idx, SentNs: at + dt}},
				Events: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: at, EndNs: at + dt, Stream: idx}}}}
		err := s.Accept(context.Background(), sh)
		if err != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, ErrBadInput) && !errors.Is(err, ErrUnknownStream) {
			t.Fatalf("Accept: %v: want stored, refused or bad input", err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("Accept: %q: want one line", err)
		}
	})
}

// TestMemoryWrite: an in-memory store (one connection) writes a batch;
// it used to wait for its own connection until the context ended.
func TestMemoryWrite(t *testing.T) {
	s := open(t, Memory, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mid, _ := monitor(t, s, "m")
	if err := s.Write(ctx, mid, &Batch{Probes: probes(10, 0, t0), Counters: []model.CounterSample{{TimeNs: t0}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountAfter(ctx, mid, TableProbes, 0, 100); n != 10 || err != nil {
		t.Errorf("probes stored: %d, %v", n, err)
	}
}

// TestMigrate3SQLite: a SQLite store of schema 2 with a duplicate event
// migrates: the duplicate goes, the rest stays, and the natural key holds.
func TestMigrate3SQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	loc, _ := ParseURL(path)
	db, err := openDB(loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fsys, err := migrations(SQLite)
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	for _, n := range []string{"00001_initial.sql", "00002_capacities.sql"} {
		data, _ := fs.ReadFile(fsys, n)
		old[n] = &fstest.MapFile{Data: data}
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, old, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `INSERT INTO monitors (name, labels, created_ns) VALUES ('m', '{}', 0)`)
	for _, start := range []int64{t0, t0, t0 + 1} {
		mustExec(t, db, `INSERT INTO events (monitor_id, kind, start_ns, end_ns, stream_id, text, detail, flags) VALUES (1, 'outage', ?, ?, -1, '', 'null', 'null')`, start, start)
	}
	s := open(t, path, Options{})
	if evs, _ := s.Events(ctx, 1, 0, 1<<62, 10); len(evs) != 2 {
		t.Errorf("events after the migration: %d, want 2", len(evs))
	}
	if err := s.Write(ctx, 1, &Batch{Events: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: t0 + 1, EndNs: t0 + 1, Stream: -1}}}); err != nil {
		t.Fatal(err)
	}
	if evs, _ := s.Events(ctx, 1, 0, 1<<62, 10); len(evs) != 2 {
		t.Errorf("events after writing one again: %d, want 2", len(evs))
	}
}
