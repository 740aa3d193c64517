package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func journalURL(t *testing.T) string {
	return "journal:" + filepath.Join(t.TempDir(), "j")
}

func readProbes(t *testing.T, s Store, mid int64) []model.ProbeSample {
	t.Helper()
	var got []model.ProbeSample
	if err := s.Probes(context.Background(), mid, 0, 1<<62, func(p model.ProbeSample) error { got = append(got, p); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// segments lists a journal's segment files of a set, oldest first.
func segments(t *testing.T, dir, set string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, set+"-*.seg"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

// TestJournalReopen: rows, streams, marks, capacities, instance ID and
// event IDs survive a close and an open; reads span several segments and
// windows, by stream then time, a late sample in a later segment winning.
func TestJournalReopen(t *testing.T) {
	url := journalURL(t)
	ctx := context.Background()
	s, err := Open(ctx, url+"?raw=256KiB&long=256KiB", Options{})
	if err != nil {
		t.Fatal(err)
	}
	mid, sids := monitor(t, s, "m")
	// Three hours at 1/s per stream: several windows, several segments.
	const n = 3 * 3600
	var want [2][]model.ProbeSample
	for i := 0; i < n; i += 100 {
		var b Batch
		for st := range int32(2) {
			ps := probes(100, st, t0+int64(i)*1e9/10*10)
			for k := range ps {
				ps[k].SentNs = t0 + int64(i+k)*1e9
				ps[k].Seq = uint32(i + k)
			}
			b.Probes = append(b.Probes, ps...)
		}
		if err := s.Write(ctx, mid, &b); err != nil {
			t.Fatal(err)
		}
		for _, p := range b.Probes {
			w := p
			w.Stream = sids[p.Stream]
			want[p.Stream] = append(want[p.Stream], w)
		}
	}
	// The late reply of a lost probe comes in a later segment.
	const lost = n - 2000 + 3
	late := want[0][lost]
	if !late.Lost || late.Late {
		t.Fatalf("probe %d is not lost: %+v", lost, late)
	}
	late.Stream, late.RTTNs, late.Late = 0, 2500e6, true
	if err := s.Write(ctx, mid, &Batch{Probes: []model.ProbeSample{late}}); err != nil {
		t.Fatal(err)
	}
	late.Stream = sids[0]
	want[0][lost] = late
	if err := s.SetShipMark(ctx, "fleet", mid, TableProbes, t0+5); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCapacity(ctx, mid, CapacityRow{FromNs: t0, UpBps: 1e6, DownBps: 2e6, UpSource: CapacityConfigured}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, mid, &Batch{Events: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: t0, EndNs: t0 + 1, Stream: -1}}}); err != nil {
		t.Fatal(err)
	}
	id, _ := s.InstanceID(ctx)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimPrefix(url, "journal:")
	if segs := segments(t, dir, "raw"); len(segs) < 4 {
		t.Errorf("%d raw segments, want several", len(segs))
	}

	s = open(t, url+"?raw=256KiB&long=256KiB", Options{})
	ms, _ := s.ListMonitors(ctx)
	mid = ms["m"]
	if got, err := s.ListStreams(ctx, mid); err != nil || len(got) != 2 {
		t.Fatalf("streams after reopen: %v, %v", got, err)
	}
	got := readProbes(t, s, mid)
	// The budget dropped the oldest segments: what is left is the newest
	// rows of each stream, whole and in order.
	first, ok, err := s.FirstSample(ctx, mid)
	if err != nil || !ok {
		t.Fatalf("FirstSample: %v %v", ok, err)
	}
	var wantLeft []model.ProbeSample
	for st := range 2 {
		for _, p := range want[st] {
			if p.SentNs >= first {
				wantLeft = append(wantLeft, p)
			}
		}
	}
	if len(got) < 1000 || !reflect.DeepEqual(got, wantLeft) {
		t.Fatalf("probes after reopen: %d rows, want %d (from %d)", len(got), len(wantLeft), (first-t0)/1e9)
	}
	if last, ok, _ := s.LastSample(ctx, mid); !ok || last != t0+(n-1)*1e9 {
		t.Errorf("LastSample %d, want %d", last, t0+(n-1)*1e9)
	}
	if v, ok, _ := s.ShipMark(ctx, "fleet", mid, TableProbes); !ok || v != t0+5 {
		t.Errorf("ship mark after reopen: %d %v", v, ok)
	}
	if c, _ := s.Capacities(ctx, mid, t0, t0+1); len(c) != 1 || c[0].DownBps != 2e6 {
		t.Errorf("capacities after reopen: %+v", c)
	}
	if id2, _ := s.InstanceID(ctx); id2 != id {
		t.Errorf("instance ID %q after reopen, was %q", id2, id)
	}
	// The same event again is not stored twice; a new one takes the next ID.
	if err := s.Write(ctx, mid, &Batch{Events: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: t0, EndNs: t0 + 1, Stream: -1},
		{Kind: model.EventOutage, StartNs: t0 + 5, EndNs: t0 + 6, Stream: -1}}}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.EventsAfter(ctx, mid, 0, 10)
	if err != nil || len(evs) != 2 || evs[0].ID != 1 || evs[1].ID != 2 {
		t.Errorf("events after reopen: %+v %v", evs, err)
	}
	// Bounded: each set within its budget and a segment.
	for _, set := range []string{"raw", "long"} {
		var total int64
		for _, p := range segments(t, dir, set) {
			st, _ := os.Stat(p)
			total += st.Size()
		}
		if total > minJournalBytes+minJournalBytes/segsPerSet+64<<10 {
			t.Errorf("%s segments: %d bytes, budget %d", set, total, minJournalBytes)
		}
	}
}

// writeSome writes n batches of 10 probes of stream 0, one second each.
func writeSome(t *testing.T, s Store, mid int64, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := s.Write(context.Background(), mid, &Batch{Probes: probes(10, 0, t0+int64(i)*1e9)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJournalDamage: a segment cut mid-record, a flipped byte, a segment
// cut short at its creation and meta.json's temporary file left by a
// kill before the rename: the journal opens, cuts the damage (saying so),
// keeps every row before it, and appends after it.
func TestJournalDamage(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		keep   int // probes readable after, of the 500 written
	}{
		{"torn-tail", func(t *testing.T, dir string) {
			seg := segments(t, dir, "raw")[0]
			st, _ := os.Stat(seg)
			if err := os.Truncate(seg, st.Size()-7); err != nil {
				t.Fatal(err)
			}
		}, 490},
		{"flipped-byte", func(t *testing.T, dir string) {
			seg := segments(t, dir, "raw")[0]
			b, _ := os.ReadFile(seg)
			// A byte inside the payload of the 26th record (of 50).
			off := len(segMagic)
			for range 25 {
				off += frameHeader + int(uint32(b[off])|uint32(b[off+1])<<8|uint32(b[off+2])<<16)
			}
			b[off+frameHeader+5] ^= 0x40
			if err := os.WriteFile(seg, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 250},
		{"temp-meta-left", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, metaFile+".tmp"), []byte(`{"version":1,"monitors":[`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 500},
		{"segment-cut-at-creation", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "raw-00000000000000ff.seg"), []byte("SOND"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := journalURL(t)
			dir := strings.TrimPrefix(url, "journal:")
			ctx := context.Background()
			s, err := Open(ctx, url, Options{})
			if err != nil {
				t.Fatal(err)
			}
			mid, _ := monitor(t, s, "m")
			writeSome(t, s, mid, 0, 50)
			s.Close()
			c.damage(t, dir)

			s = open(t, url, Options{})
			if _, err := s.Streams(ctx, mid, testStreams); err != nil {
				t.Fatal(err)
			}
			got := readProbes(t, s, mid)
			if len(got) != c.keep {
				t.Fatalf("%d probes after %s, want %d", len(got), c.name, c.keep)
			}
			for i, p := range got {
				if p.SentNs != t0+int64(i/10)*1e9+int64(i%10)*100e6 {
					t.Fatalf("probe %d sent at %d: a row before the damage is missing", i, p.SentNs)
				}
			}
			// Appends go on after the cut, readable.
			writeSome(t, s, mid, 100, 1)
			if n := len(readProbes(t, s, mid)); n != c.keep+10 {
				t.Errorf("%d probes after one more batch, want %d", n, c.keep+10)
			}
		})
	}
}

// journalCrashEnv names the journal a child of TestJournalKill writes.
const journalCrashEnv = "SONDE_JOURNAL_CRASH_CHILD"

// TestJournalKillChild is the writer TestJournalKill kills.
func TestJournalKillChild(t *testing.T) {
	url := os.Getenv(journalCrashEnv)
	if url == "" {
		t.Skip("only run as TestJournalKill's child")
	}
	// A small budget: segments roll over while it writes; ship marks move.
	writeUntilKilled(t, url+"?raw=4MiB&long=256KiB", Options{}, func(s Store, mid int64, n int) error {
		return s.SetShipMark(context.Background(), "d", mid, TableProbes, int64(n))
	})
}

// TestJournalKill: kill -9 of a writer loses no batch it wrote; the
// journal opens and holds every one, in order, without a gap.
func TestJournalKill(t *testing.T) {
	url := journalURL(t)
	committed := killWriter(t, "TestJournalKillChild", journalCrashEnv, url, 300)
	s := open(t, url+"?raw=4MiB&long=256KiB", Options{})
	ctx := context.Background()
	ms, _ := s.ListMonitors(ctx)
	got := readProbes(t, s, ms["crash"])
	if len(got) < committed*crashBatch {
		t.Fatalf("%d probes after kill -9, want at least the %d written", len(got), committed*crashBatch)
	}
	for i, p := range got {
		if p.SentNs != t0+int64(i)*100e6 {
			t.Fatalf("probe %d sent at %d, want %d: a written row is missing", i, p.SentNs, t0+int64(i)*100e6)
		}
	}
	t.Logf("killed after %d reported batches; %d probes stored", committed, len(got))
}

// TestJournalReadOnly: a reader opened beside the writer (a report) sees
// the rows written before it opened, repairs and writes nothing, and a
// missing journal is an error, not a new one.
func TestJournalReadOnly(t *testing.T) {
	url := journalURL(t)
	dir := strings.TrimPrefix(url, "journal:")
	ctx := context.Background()
	if _, err := OpenExisting(ctx, Location{Backend: Journal, Path: dir}); err == nil {
		t.Fatal("OpenExisting made a missing journal")
	}
	w := open(t, url, Options{})
	mid, _ := monitor(t, w, "m")
	writeSome(t, w, mid, 0, 20)
	// A torn tail, as if the writer were mid-write.
	seg := segments(t, dir, "raw")[0]
	f, _ := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{200, 0, 0, 0, 1})
	f.Close()
	st, _ := os.Stat(seg)
	r, err := OpenExisting(ctx, Location{Backend: Journal, Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := len(readProbes(t, r, mid)); n != 200 {
		t.Errorf("reader sees %d probes, want 200", n)
	}
	if st2, _ := os.Stat(seg); st2.Size() != st.Size() {
		t.Errorf("the reader changed the segment: %d bytes, was %d", st2.Size(), st.Size())
	}
	if err := r.Write(ctx, mid, &Batch{}); err == nil {
		t.Error("a read-only journal took a write")
	}
	if _, err := r.ListResults(ctx, 10); err == nil || !strings.Contains(err.Error(), "monitor's rows only") {
		t.Errorf("results from a journal: %v", err)
	}
}

// TestJournalURL: journal:DIR parses; an empty directory is refused.
func TestJournalURL(t *testing.T) {
	for in, want := range map[string]Location{
		"journal:/var/lib/sonde/journal": {Backend: Journal, Path: "/var/lib/sonde/journal"},
		"journal:rel/dir":                {Backend: Journal, Path: "rel/dir"},
		"JOURNAL:///abs":                 {Backend: Journal, Path: "/abs"},
	} {
		if got, err := ParseURL(in); err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{
		"journal:", "journal:?raw=1MiB", // no directory
		"journal:/d?raw=1MiB&raw=2MiB", // twice
		"journal:/d?cache=1MiB",        // unknown
		"journal:/d?raw=lots",          // not a size
		"journal:/d?raw=100KiB",        // under the least budget
		"journal:/d?long=2TiB",         // over the greatest
		"journal:/d?raw=%zz",           // bad escape
	} {
		if loc, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = %+v, want an error", bad, loc)
		}
	}
	loc, err := ParseURL("journal:/d?raw=64MiB&long=1GB")
	want := Location{Backend: Journal, Path: "/d", Journal: JournalLimits{RawBytes: 64 << 20, LongBytes: 1e9}}
	if err != nil || loc != want {
		t.Errorf("budgets: %+v, %v; want %+v", loc, err, want)
	}
	// String gives back a URL that parses to the same location.
	for _, l := range []Location{{Backend: Journal, Path: "/x"}, want} {
		back, err := ParseURL(l.String())
		if err != nil || back != l {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", l.String(), back, err, l)
		}
	}
	if s := (Location{Backend: Journal, Path: "/x"}).String(); s != "journal:/x" {
		t.Errorf("String %q", s)
	}
}

// FuzzJournalRecord: the segment reader and the record decoder take any
// bytes without a panic or an allocation past the bounds; a record that
// decodes encodes back to one that decodes to the same rows.
func FuzzJournalRecord(f *testing.F) {
	var e enc
	e.probe(1, &model.ProbeSample{Stream: 2, SentNs: t0, Seq: 3, RTTNs: 20e6, Lost: true, Load: 3})
	e.counter(1, &model.CounterSample{TimeNs: t0, RxBytes: 1 << 40})
	e.rollup(1, &Rollup{Stream: 2, MinuteNs: t0, Sent: 600, Data: []byte{1, 2}})
	_ = e.event(1, 7, &model.MonitorEvent{Kind: "outage", StartNs: t0, EndNs: t0 + 1, Stream: -1, Text: "x", Detail: map[string]float64{"a": 1}})
	e.restart(1, &RestartRow{TimeNs: t0, Version: "v"})
	f.Add(e.done())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := frameReader{r: bufio.NewReader(strings.NewReader(string(b)))}
		for range 1000 {
			typ, payload, err := fr.next()
			if err != nil {
				return
			}
			var rows []jrow
			if decodeRecord(typ, payload, func(r *jrow) error {
				c := *r
				c.roll.Data = append([]byte(nil), r.roll.Data...)
				rows = append(rows, c)
				return nil
			}) != nil {
				continue
			}
			var e enc
			for i := range rows {
				r := &rows[i]
				switch typ {
				case recProbes:
					e.probe(r.mon, &r.probe)
				case recCounters:
					e.counter(r.mon, &r.count)
				case recRollups:
					e.rollup(r.mon, &r.roll)
				case recEvents:
					_ = e.event(r.mon, r.event.ID, &r.event.Event)
				case recRestarts:
					e.restart(r.mon, &r.rst)
				}
			}
			again := frameReader{r: bufio.NewReader(strings.NewReader(string(e.done())))}
			n := 0
			for {
				typ2, p2, err := again.next()
				if err != nil {
					break
				}
				if err := decodeRecord(typ2, p2, func(r *jrow) error {
					if n >= len(rows) || r.mon != rows[n].mon || r.at(typ2) != rows[n].at(typ) {
						t.Fatalf("row %d changed in a round trip", n)
					}
					n++
					return nil
				}); err != nil {
					t.Fatalf("a record re-encoded does not decode: %v", err)
				}
			}
			if n != len(rows) {
				t.Fatalf("%d rows after a round trip, want %d", n, len(rows))
			}
		}
	})
}

// BenchmarkJournalProbeBytes writes 1 M probes as BenchmarkProbeRowBytes
// does (8 streams at 10/s, one-second batches, a realistic spread) to a
// journal and reports the bytes a probe takes in the raw segments
// (B/row, framing included), the write rate, and the hours the default
// raw budget holds at 8 × 10/s.
func BenchmarkJournalProbeBytes(b *testing.B) {
	const rows, streams, perBatch = 1_000_000, 8, 80
	for range b.N {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "j")
		st, mid := benchStore(b, "journal:"+dir+"?raw=1GiB", Options{}, streams)
		elapsed := benchWriteProbes(b, st, mid, rows, streams, perBatch)
		st.Close()
		var size int64
		segs, _ := filepath.Glob(filepath.Join(dir, "raw-*.seg"))
		for _, p := range segs {
			fi, _ := os.Stat(p)
			size += fi.Size()
		}
		perRow := float64(size) / rows
		hours := DefaultJournalRaw / perRow / (streams * 10) / 3600
		b.ReportMetric(perRow, "B/row")
		b.ReportMetric(rows/elapsed.Seconds(), "rows/s")
		fmt.Fprintf(os.Stderr, "journal probes: %d, raw segments %d bytes: %.1f B/row; written at %.0f rows/s; %d MiB hold %.1f h at 8 × 10/s\n",
			rows, size, perRow, rows/elapsed.Seconds(), DefaultJournalRaw>>20, hours)
	}
}

// BenchmarkJournalOpen opens a journal whose raw set is full (the default
// 16 MiB of probes, 8 streams at 10/s): every segment is read and checked
// at open, so this is the daemon's start-up cost of its journal.
func BenchmarkJournalOpen(b *testing.B) {
	b.StopTimer()
	dir := filepath.Join(b.TempDir(), "j")
	st, _ := benchStore(b, "journal:"+dir, Options{}, 8)
	ms, _ := st.ListMonitors(context.Background())
	benchWriteProbes(b, st, ms["bench"], 800_000, 8, 80)
	st.Close()
	for range b.N {
		b.StartTimer()
		s, err := Open(context.Background(), "journal:"+dir, Options{})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
