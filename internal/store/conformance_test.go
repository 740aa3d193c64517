package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store/pgtest"
)

// backend starts an engine for a test and returns how to make a fresh,
// empty store location on it.
type backend struct {
	name  string
	start func(t *testing.T) (fresh func(t *testing.T) string)
	// rowsOnly: a monitor's rows and shipping only (the journal): the
	// cases of results, fleets and schemas skip.
	rowsOnly bool
}

// backends are the engines every conformance case runs against. The
// PostgreSQL server starts once per backend run, in the backend's subtest
// (it skips there, outside CI, when PostgreSQL is not installed).
var backends = []backend{
	{"sqlite", func(t *testing.T) func(t *testing.T) string {
		if !HaveSQLite {
			t.Skip("this build has no SQLite (tag monitoronly)")
		}
		return func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") }
	}, false},
	{"postgres", func(t *testing.T) func(t *testing.T) string {
		skipWithoutPostgres(t)
		pg := pgtest.Start(t)
		return pg.NewDatabase
	}, false},
	{"journal", func(*testing.T) func(t *testing.T) string {
		return func(t *testing.T) string { return "journal:" + filepath.Join(t.TempDir(), "journal") }
	}, true},
}

// skipRowsOnly skips a case the journal has no part in.
func skipRowsOnly(t *testing.T, b backend, why string) {
	if b.rowsOnly {
		t.Skipf("the %s store keeps a monitor's rows only: no %s", b.name, why)
	}
}

// skipWithoutPostgres skips in the monitor-only build (tag monitoronly),
// which has no PostgreSQL driver: its SQLite cases still run.
func skipWithoutPostgres(t *testing.T) {
	if !havePostgres {
		t.Skip("this build has no PostgreSQL driver (tag monitoronly)")
	}
}

// TestConformance runs one suite against both backends: they must behave
// the same to every caller.
func TestConformance(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, url string)
		sql  string // what the case needs of a SQL store ("": rows only)
	}{
		{"results", testResults, "results"},
		{"result-bounds", testResultBounds, "results"},
		{"result-kinds", testResultKinds, "results"},
		{"bad-ids", testBadIDs, "results"},
		{"monitor-identity", testIdentity, ""},
		{"monitor-rows", testMonitorRows, ""},
		{"batch-atomic-and-bounded", testBatchAtomic, ""},
		{"late-replaces-lost", testLateReplacesLost, ""},
		{"lateness-past-32-bits", testLatenessWide, ""},
		{"retention", testRetention, ""},
		{"capacities", testCapacities, ""},
		{"newer-schema", testNewerSchema, "schema"},
		{"migrate-twice", testMigrateTwice, "schema"},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fresh := b.start(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.sql != "" {
						skipRowsOnly(t, b, c.sql)
					}
					c.run(t, fresh(t))
				})
			}
		})
	}
}

func open(t *testing.T, url string, opt Options) Store {
	t.Helper()
	s, err := Open(context.Background(), url, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func result(i int) *model.Result {
	return &model.Result{
		Schema:   model.SchemaVersion,
		ID:       fmt.Sprintf("%032x", i+1),
		Start:    time.Date(2026, 1, 2, 3, 4, i, 0, time.UTC),
		Client:   model.Endpoint{Software: "sonde-web"},
		Baseline: &model.RTTResult{RTTMs: model.Stats{N: 20, Min: 10 + float64(i)}},
		Download: &model.DirectionResult{Direction: "download", GoodputBps: 100e6 * float64(i+1),
			Latency: &model.RTTResult{RTTMs: model.Stats{N: 50, P50: 40}}},
		Upload: &model.DirectionResult{Direction: "upload", GoodputBps: 10e6,
			Latency: &model.RTTResult{RTTMs: model.Stats{N: 50, P50: 400}}},
		Errors: []string{"x"},
	}
}

func testResults(t *testing.T, url string) {
	ctx := context.Background()
	s, err := Open(ctx, url, Options{Results: Limits{Keep: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.AddResult(ctx, result(i)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListResults(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("kept %d results, want the last 3", len(list))
	}
	want := Summary{ID: result(4).ID, Kind: model.KindPage, Start: result(4).Start, Software: "sonde-web", DownloadBps: 500e6,
		UploadBps: 10e6, IdleRTTMs: 14, LoadedRTTMs: 400, Errors: 1}
	if list[0] != want {
		t.Errorf("newest row %+v, want %+v", list[0], want)
	}
	if list[2].ID != result(2).ID {
		t.Errorf("oldest kept %s, want %s", list[2].ID, result(2).ID)
	}
	if _, err := s.GetResult(ctx, result(0).ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("pruned result: err %v, want ErrNotFound", err)
	}
	raw, err := s.GetResult(ctx, result(3).ID)
	if err != nil {
		t.Fatal(err)
	}
	var got model.Result
	if err := json.Unmarshal(raw, &got); err != nil || got.ID != result(3).ID || got.Download.GoodputBps != 400e6 {
		t.Errorf("stored JSON %s: %v", raw, err)
	}
	// Re-adding an ID replaces it and makes it the newest.
	r := result(2)
	r.Download.GoodputBps = 1
	if err := s.AddResult(ctx, r); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListResults(ctx, 10); len(list) != 3 || list[0].ID != r.ID || list[0].DownloadBps != 1 {
		t.Errorf("after replacing: %+v", list)
	}
	s.Close()
	// The results persist across opens.
	s = open(t, url, Options{Results: Limits{Keep: 3}})
	if list, _ := s.ListResults(ctx, 1); len(list) != 1 || list[0].ID != r.ID {
		t.Errorf("after reopen: %+v", list)
	}
}

// bigResult is result(i) carrying about n bytes of JSON in its notes.
func bigResult(i, n int) *model.Result {
	r := result(i)
	r.Notes = []string{strings.Repeat("n", n)}
	return r
}

// testResultBounds: the row cap refuses, the byte budget forgets the
// oldest and always keeps the newest (internal/history's bounds, kept).
func testResultBounds(t *testing.T, url string) {
	ctx := context.Background()
	const row, budget = 20 << 10, 100 << 10
	s := open(t, url, Options{Results: Limits{Keep: 1000, MaxRowBytes: budget, MaxTotalBytes: budget}})
	if err := s.AddResult(ctx, bigResult(50, budget+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("result over the row cap: %v, want ErrTooLarge", err)
	}
	if _, err := s.GetResult(ctx, result(50).ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused result was stored: %v", err)
	}
	for i := range 20 {
		if err := s.AddResult(ctx, bigResult(i, row)); err != nil {
			t.Fatal(err)
		}
		n, bytes, err := s.ResultUsage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if bytes > budget {
			t.Fatalf("after %d adds: %d bytes stored, over the %d budget", i+1, bytes, budget)
		}
		if i >= 5 && n != 4 {
			t.Fatalf("after %d adds: %d rows kept, want 4 (each a little over 20 KiB)", i+1, n)
		}
		if _, err := s.GetResult(ctx, result(i).ID); err != nil {
			t.Fatalf("newest result %d not kept: %v", i, err)
		}
	}
	if err := s.AddResult(ctx, bigResult(99, budget-2<<10)); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := s.ResultUsage(ctx); n != 1 {
		t.Fatalf("after a near-budget result: %d rows, want 1", n)
	}
}

func testBadIDs(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	for _, id := range []string{"", "abc", strings.Repeat("g", 32), strings.Repeat("A", 32), "../../etc/passwd", strings.Repeat("0", 33), "' OR 1=1 --"} {
		if _, err := s.GetResult(ctx, id); !errors.Is(err, ErrBadID) {
			t.Errorf("GetResult(%q): %v, want ErrBadID", id, err)
		}
	}
	r := result(0)
	r.ID = "not-an-id"
	if err := s.AddResult(ctx, r); !errors.Is(err, ErrBadID) {
		t.Errorf("AddResult with a bad id: %v", err)
	}
}

func testIdentity(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	a, err := s.Monitor(ctx, Identity{Name: "home-1", Labels: map[string]string{"isp": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Monitor(ctx, Identity{Name: "home-2"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Monitor(ctx, Identity{Name: "home-1", Labels: map[string]string{"isp": "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if a == b || a != again {
		t.Errorf("monitor ids: home-1 %d, home-2 %d, home-1 again %d", a, b, again)
	}
	many := map[string]string{}
	for i := range MaxLabels + 1 {
		many[fmt.Sprint(i)] = "v"
	}
	for _, id := range []Identity{{Name: ""}, {Name: strings.Repeat("n", MaxNameLen+1)}, {Name: "a\nb"}, {Name: "ok", Labels: many},
		{Name: "ok", Labels: map[string]string{"k": strings.Repeat("v", MaxLabelLen+1)}}} {
		if _, err := s.Monitor(ctx, id); !errors.Is(err, ErrBadInput) {
			t.Errorf("Monitor(%.30q, %d labels): %v, want ErrBadInput", id.Name, len(id.Labels), err)
		}
	}
}

var testStreams = []model.MonitorStream{
	{Target: "198.18.0.2:862", Kind: model.ProbeSTAMP, Name: "198.18.0.2:862/stamp"},
	{Target: "198.18.0.2", Kind: model.ProbeICMP, DSCP: 46, Name: "198.18.0.2/icmp/ef"},
}

// monitor registers a monitor with testStreams.
func monitor(t *testing.T, s Store, name string) (int64, []int32) {
	t.Helper()
	ctx := context.Background()
	id, err := s.Monitor(ctx, Identity{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	sids, err := s.Streams(ctx, id, testStreams)
	if err != nil {
		t.Fatal(err)
	}
	return id, sids
}

const t0 = int64(1_767_225_600_000_000_000) // 2026-01-01 UTC

func probes(n int, stream int32, start int64) []model.ProbeSample {
	out := make([]model.ProbeSample, n)
	for i := range out {
		p := model.ProbeSample{Stream: stream, Seq: uint32(i), SentNs: start + int64(i)*100e6, LatenessNs: int64(i * 1000),
			RTTNs: 19e6 + int64(i)*1000, FwdNs: 9e6, RevNs: 10e6 + int64(i), Load: model.LoadState(i % 5)}
		switch i % 7 {
		case 3:
			p.RTTNs, p.FwdNs, p.RevNs, p.Lost = -1, 0, 0, true
		case 5:
			p.RTTNs, p.Lost, p.Late = 2500e6, true, true
		}
		out[i] = p
	}
	return out
}

func testMonitorRows(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	mid, sids := monitor(t, s, "m")
	other, _ := monitor(t, s, "other")
	if got, err := s.ListStreams(ctx, mid); err != nil || len(got) != 2 || got[sids[1]] != testStreams[1] {
		t.Fatalf("ListStreams: %+v, %v", got, err)
	}
	b := &Batch{
		Probes:   append(probes(50, 0, t0), probes(30, 1, t0)...),
		Counters: []model.CounterSample{{TimeNs: t0, RxBytes: 1 << 63, TxBytes: 5}, {TimeNs: t0 + 1e8, RxBytes: 1<<63 + 1500, TxBytes: 9}},
		Rollups:  []Rollup{{Stream: 1, MinuteNs: t0, Sent: 600, Lost: 3, Late: 1, SumNs: 1.2e10, SumSqNs: 3e17, MinNs: 18e6, MaxNs: 40e6, Data: []byte(`{"bins":[]}`)}},
		Events: []model.MonitorEvent{
			{Kind: model.EventOutage, StartNs: t0 + 1e9, EndNs: t0 + 31e9, Stream: -1, Text: "link down 30 s", Detail: map[string]float64{"lost": 300}, Flags: []string{"link"}},
			{Kind: model.EventBaselineStep, StartNs: t0 + 60e9, EndNs: t0 + 60e9, Stream: 0, Text: "step"},
		},
	}
	if err := s.Write(ctx, mid, b); err != nil {
		t.Fatal(err)
	}
	// A replayed batch inserts nothing twice, events included (their
	// natural key: monitor, kind, stream, start, end).
	replay := *b
	if err := s.Write(ctx, mid, &replay); err != nil {
		t.Fatal(err)
	}
	var got []model.ProbeSample
	if err := s.Probes(ctx, mid, t0, t0+1e12, func(p model.ProbeSample) error { got = append(got, p); return nil }); err != nil {
		t.Fatal(err)
	}
	want := append(probes(50, sids[0], t0), probes(30, sids[1], t0)...)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("probes read back: %d rows, want %d; first %+v want %+v", len(got), len(want), first(got), first(want))
	}
	// The range is half-open and by send time.
	n := 0
	_ = s.Probes(ctx, mid, t0+1e8, t0+5e8, func(model.ProbeSample) error { n++; return nil })
	if n != 8 {
		t.Errorf("probes in [t0+0.1s, t0+0.5s): %d, want 8 (4 per stream)", n)
	}
	if err := s.Probes(ctx, other, 0, 1<<62, func(model.ProbeSample) error { n = -100; return nil }); err != nil || n == -100 {
		t.Errorf("another monitor sees this one's probes (%v)", err)
	}
	var cs []model.CounterSample
	_ = s.Counters(ctx, mid, 0, 1<<62, func(c model.CounterSample) error { cs = append(cs, c); return nil })
	if !reflect.DeepEqual(cs, b.Counters) {
		t.Errorf("counters %+v, want %+v", cs, b.Counters)
	}
	var rs []Rollup
	_ = s.Rollups(ctx, mid, t0, t0+60e9, func(r Rollup) error { rs = append(rs, r); return nil })
	wr := b.Rollups[0]
	wr.Stream = sids[1]
	if len(rs) != 1 || !reflect.DeepEqual(rs[0], wr) {
		t.Errorf("rollups %+v, want %+v", rs, wr)
	}
	ev, err := s.Events(ctx, mid, t0+20e9, t0+70e9, 100)
	if err != nil {
		t.Fatal(err)
	}
	we := b.Events
	we[1].Stream = sids[0]
	if !reflect.DeepEqual(ev, we) {
		t.Errorf("events %+v, want %+v", ev, we)
	}
	if ev, _ := s.Events(ctx, mid, t0+32e9, t0+59e9, 100); len(ev) != 0 {
		t.Errorf("events between the two: %+v", ev)
	}
	last, ok, err := s.LastSample(ctx, mid)
	if err != nil || !ok || last != t0+49*100e6 {
		t.Errorf("LastSample %d %v %v, want %d", last, ok, err, t0+49*100e6)
	}
	if _, ok, _ := s.LastSample(ctx, other); ok {
		t.Error("LastSample of a monitor without probes: ok")
	}
	if first, ok, err := s.FirstSample(ctx, mid); err != nil || !ok || first != t0 {
		t.Errorf("FirstSample %d %v %v, want %d", first, ok, err, t0)
	}
	if _, ok, _ := s.FirstSample(ctx, other); ok {
		t.Error("FirstSample of a monitor without probes: ok")
	}
	if ms, err := s.ListMonitors(ctx); err != nil || len(ms) != 2 || ms["m"] != mid || ms["other"] != other {
		t.Errorf("ListMonitors: %v, %v", ms, err)
	}
	if err := s.Restart(ctx, mid, RestartRow{TimeNs: t0 + 100e9, LastNs: last, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	if rr, err := s.Restarts(ctx, mid, 0, 1<<62); err != nil || len(rr) != 1 || rr[0].LastNs != last {
		t.Errorf("restarts %+v %v", rr, err)
	}
}

func first[T any](s []T) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

// testBatchAtomic: a batch with a bad row writes nothing of itself, and
// batches over the bounds are refused before any write.
func testBatchAtomic(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	mid, _ := monitor(t, s, "m")
	bad := &Batch{Probes: append(probes(10, 0, t0), model.ProbeSample{Stream: 7, SentNs: t0})}
	if err := s.Write(ctx, mid, bad); !errors.Is(err, ErrUnknownStream) {
		t.Fatalf("unknown stream: %v", err)
	}
	n := 0
	_ = s.Probes(ctx, mid, 0, 1<<62, func(model.ProbeSample) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d probes of a refused batch stored", n)
	}
	for name, b := range map[string]*Batch{
		"rows":   {Probes: make([]model.ProbeSample, MaxBatchRows+1)},
		"text":   {Events: []model.MonitorEvent{{Kind: "x", Text: strings.Repeat("t", MaxEventText+1)}}},
		"rollup": {Rollups: []Rollup{{Data: make([]byte, MaxRollupData+1)}}},
		// A damaged row would fail every report over it: refused.
		"rollup data": {Rollups: []Rollup{{Data: []byte{2, 0xff}}}},
	} {
		if err := s.Write(ctx, mid, b); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s over the bound: %v, want ErrBadInput", name, err)
		}
	}
	// A monitor without registered streams has no stream to write to.
	if err := s.Write(ctx, 999, &Batch{Probes: probes(1, 0, t0)}); !errors.Is(err, ErrUnknownStream) {
		t.Errorf("unregistered monitor: %v", err)
	}
}

func testRetention(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	mid, _ := monitor(t, s, "m")
	day := int64(24 * time.Hour)
	now := t0 + 40*day
	// One probe per stream per day for 40 days, counters and rollups the
	// same, events on days 0 and 39.
	var b Batch
	for d := range int64(40) {
		for st := range int32(2) {
			b.Probes = append(b.Probes, model.ProbeSample{Stream: st, Seq: uint32(d), SentNs: t0 + d*day, RTTNs: 1})
			b.Rollups = append(b.Rollups, Rollup{Stream: st, MinuteNs: t0 + d*day, Sent: 1, Data: []byte(`{}`)})
		}
		b.Counters = append(b.Counters, model.CounterSample{TimeNs: t0 + d*day})
	}
	b.Events = []model.MonitorEvent{{Kind: model.EventOutage, StartNs: t0, EndNs: t0 + 1}, {Kind: model.EventOutage, StartNs: t0 + 39*day, EndNs: t0 + 39*day}}
	if err := s.Write(ctx, mid, &b); err != nil {
		t.Fatal(err)
	}
	// Raw 30 days, rollups 35, events forever; a batch of 3 rows makes
	// each table take several rounds.
	d, err := s.Retain(ctx, Retention{Raw: 30 * 24 * time.Hour, Rollups: 35 * 24 * time.Hour, Batch: 3}, now)
	if err != nil {
		t.Fatal(err)
	}
	// Days 0–9 are older than 30 days (day 10 is exactly 30 days old: kept).
	if d != (Deleted{Probes: 20, Counters: 10, Rollups: 10}) {
		t.Errorf("deleted %+v, want 20 probes, 10 counters, 10 rollups", d)
	}
	var oldest int64 = 1 << 62
	_ = s.Probes(ctx, mid, 0, 1<<62, func(p model.ProbeSample) error { oldest = min(oldest, p.SentNs); return nil })
	if oldest != t0+10*day {
		t.Errorf("oldest probe kept at day %d, want 10", (oldest-t0)/day)
	}
	if ev, _ := s.Events(ctx, mid, 0, 1<<62, 10); len(ev) != 2 {
		t.Errorf("events kept: %d, want both (events are kept forever by default)", len(ev))
	}
	d, _ = s.Retain(ctx, Retention{Events: 30 * 24 * time.Hour}, now)
	if d != (Deleted{Events: 1}) {
		t.Errorf("event retention deleted %+v, want 1 event", d)
	}
}

// testNewerSchema: a database migrated by a newer sonde is refused with
// one line naming both versions, and left as it was.
func testNewerSchema(t *testing.T, url string) {
	ctx := context.Background()
	s := open(t, url, Options{})
	s.Close()
	loc, _ := ParseURL(url)
	db, err := openDB(loc, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	future := SchemaVersion() + 41
	if _, err := db.Exec(rebind(loc.Backend, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`), future, true); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, url, Options{})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("newer schema: %v, want ErrNewerSchema", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, fmt.Sprint(future)) {
		t.Errorf("error %q: want one line naming version %d", msg, future)
	}
	if _, err := Migrate(ctx, url); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Migrate on a newer schema: %v", err)
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM goose_db_version`).Scan(&n); err != nil || n < 2 {
		t.Errorf("version table after refusal: %d rows, %v", n, err)
	}
}

func testMigrateTwice(t *testing.T, url string) {
	ctx := context.Background()
	for range 2 {
		v, err := Migrate(ctx, url)
		if err != nil || v != SchemaVersion() || v < 1 {
			t.Fatalf("Migrate: version %d, %v; want %d", v, err, SchemaVersion())
		}
	}
}

// testLateReplacesLost: the prober reports a probe lost at its timeout and
// again, late with its RTT, when the reply comes; the late row replaces
// the lost one whether it comes in a later batch or the same one, and
// nothing else replaces a stored row.
func testLateReplacesLost(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	mid, _ := monitor(t, s, "m")
	lost := func(seq uint32) model.ProbeSample {
		return model.ProbeSample{Stream: 0, Seq: seq, SentNs: t0 + int64(seq)*100e6, LatenessNs: 7, RTTNs: -1, Lost: true, Load: model.LoadUp}
	}
	late := func(seq uint32) model.ProbeSample {
		p := lost(seq)
		p.RTTNs, p.FwdNs, p.RevNs, p.Late = 2500e6+int64(seq), 1200e6, 1300e6, true
		return p
	}
	ok := func(seq uint32) model.ProbeSample {
		p := lost(seq)
		p.RTTNs, p.Lost = 20e6, false
		return p
	}
	// Batch 1: probe 0 lost, 1 answered, 2 lost then late in the same batch.
	if err := s.Write(ctx, mid, &Batch{Probes: []model.ProbeSample{lost(0), ok(1), lost(2), late(2)}}); err != nil {
		t.Fatal(err)
	}
	// Batch 2: probe 0's late reply; a late sample for the answered probe 1
	// and a lost one for the late probe 2 (neither may replace anything).
	if err := s.Write(ctx, mid, &Batch{Probes: []model.ProbeSample{late(0), late(1), lost(2)}}); err != nil {
		t.Fatal(err)
	}
	var got []model.ProbeSample
	if err := s.Probes(ctx, mid, t0, t0+1e12, func(p model.ProbeSample) error { p.Stream = 0; got = append(got, p); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []model.ProbeSample{late(0), ok(1), late(2)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("probes after late replies:\n got %+v\nwant %+v", got, want)
	}
}

// testLatenessWide: a probe sent seconds after its deadline (a suspended
// or starved monitor) keeps its lateness, past the 2.147 s of 32 bits.
func testLatenessWide(t *testing.T, url string) {
	s := open(t, url, Options{})
	ctx := context.Background()
	mid, _ := monitor(t, s, "m")
	in := probes(3, 0, t0)
	in[0].LatenessNs, in[1].LatenessNs, in[2].LatenessNs = 2_147_483_648, 5e9, 1<<40
	if err := s.Write(ctx, mid, &Batch{Probes: in}); err != nil {
		t.Fatal(err)
	}
	var got []int64
	if err := s.Probes(ctx, mid, t0, t0+1e12, func(p model.ProbeSample) error { got = append(got, p.LatenessNs); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := []int64{2_147_483_648, 5e9, 1 << 40}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lateness read back %v, want %v", got, want)
	}
}
