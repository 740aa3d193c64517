package fleet

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/store/pgtest"
)

// t0 is the synthetic fleet's first minute (an hour boundary).
var t0 = time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC).UnixNano()

const (
	minNs        = int64(60e9)
	probesPerMin = 600 // 10 probes/s
	hours        = 3
)

// fleetMon is one synthetic monitor: its labels, and every lossEvery-th
// probe lost (0: none).
type fleetMon struct {
	name      string
	labels    map[string]string
	lossEvery int
	outages   [][2]int64 // link outages (stored events), offsets from t0 in minutes
}

// synthFleet: acme's three monitors are down together once (upstream),
// m4 alone (its line); m2 loses 1 % of its probes.
var synthFleet = []fleetMon{
	{"m1", map[string]string{"isp": "acme", "region": "north"}, 0, [][2]int64{{70, 75}}},
	{"m2", map[string]string{"isp": "acme", "region": "north"}, 100, [][2]int64{{71, 76}}},
	{"m3", map[string]string{"isp": "acme", "region": "south"}, 0, [][2]int64{{72, 74}}},
	{"m4", map[string]string{"isp": "other", "region": "south"}, 0, [][2]int64{{120, 125}}},
}

// rollupsOf builds a monitor's minute rollups of stream s for minutes
// [from, to) with the reliability package's Roller, as the daemon does:
// RTT 20 ms, 1 s for one probe in 50, every lossEvery-th probe lost.
func rollupsOf(t *testing.T, s int32, fm fleetMon, from, to int) []store.Rollup {
	t.Helper()
	an, err := reliability.New(reliability.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Rollup
	r := reliability.NewRoller(an.ThresholdsNs(), func(m model.MonitorRollup) {
		sr, err := store.RollupFrom(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sr)
	})
	for m := from; m < to; m++ {
		for i := range probesPerMin {
			p := model.ProbeSample{Stream: s, SentNs: t0 + int64(m)*minNs + int64(i)*100e6, Seq: uint32(m*probesPerMin + i), RTTNs: 20e6, Load: model.LoadIdle}
			if i%50 == 7 {
				p.RTTNs = 1e9
			}
			if fm.lossEvery > 0 && (m*probesPerMin+i)%fm.lossEvery == 0 {
				p.Lost, p.RTTNs = true, -1
			}
			if err := r.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.Flush()
	return out
}

// writeFleet registers the fleet and writes hours of rollups for two
// targets per monitor, and its stored outages.
func writeFleet(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	for _, fm := range synthFleet {
		id, err := st.Monitor(ctx, store.Identity{Name: fm.name, Labels: fm.labels})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Streams(ctx, id, []model.MonitorStream{
			{Name: "stamp a", Target: "a.example:862", Kind: model.ProbeSTAMP},
			{Name: "stamp b", Target: "b.example:862", Kind: model.ProbeSTAMP},
		}); err != nil {
			t.Fatal(err)
		}
		b := &store.Batch{}
		for s := range int32(2) {
			b.Rollups = append(b.Rollups, rollupsOf(t, s, fm, 0, hours*60)...)
		}
		for _, o := range fm.outages {
			b.Events = append(b.Events, model.MonitorEvent{Kind: model.EventOutage, StartNs: t0 + o[0]*minNs, EndNs: t0 + o[1]*minNs, Stream: -1,
				Text: "outage of the link", Flags: []string{"link"}})
		}
		b.Events = append(b.Events, model.MonitorEvent{Kind: model.EventLoaded, StartNs: t0 + 30*minNs, EndNs: t0 + 31*minNs, Stream: 0,
			Text: "loaded episode", Flags: []string{"down", "queue=bloated", "grade=C"}})
		if err := st.Write(ctx, id, b); err != nil {
			t.Fatal(err)
		}
	}
}

var backends = []struct {
	name  string
	start func(t *testing.T) func(t *testing.T) string
}{
	{"sqlite", func(*testing.T) func(t *testing.T) string {
		return func(t *testing.T) string { return filepath.Join(t.TempDir(), "fleet.db") }
	}},
	{"postgres", func(t *testing.T) func(t *testing.T) string { return pgtest.Start(t).NewDatabase }},
}

func openStore(t *testing.T, url string) (store.Store, store.FleetReader) {
	t.Helper()
	st, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, st
}

func TestFleetReport(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, url string)
	}{
		{"verdicts-and-upstream", testVerdicts},
		{"aggregate-is-exact", testAggregateExact},
		{"label-filter", testLabelFilter},
		{"empty-store", testEmpty},
		{"partial-hours", testPartialHours},
		{"write-during-merge", testWriteDuringMerge},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			fresh := b.start(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
			}
		})
	}
}

func report(t *testing.T, f store.FleetReader, req Request) *model.FleetReport {
	t.Helper()
	rep, err := Report(context.Background(), f, req)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func whole() Request { return Request{FromNs: t0, ToNs: t0 + hours*3600e9} }

func monitorNamed(t *testing.T, rep *model.FleetReport, name string) model.FleetMonitor {
	t.Helper()
	for _, m := range rep.Monitors {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no monitor %q in the report", name)
	return model.FleetMonitor{}
}

func testVerdicts(t *testing.T, url string) {
	st, f := openStore(t, url)
	writeFleet(t, st)
	rep := report(t, f, whole())
	if len(rep.Monitors) != 4 {
		t.Fatalf("%d monitors, want 4", len(rep.Monitors))
	}
	// Hand-computed: 2 streams × 180 min × 600 probes = 216,000 sent. m1
	// lost none: every profile's latency (≥ 5 s) holds every answered
	// probe, R = 1, lower bound 1 − 3/n = 0.999986 ≥ each requirement: PASS.
	// m2 lost every 100th: 2,160 lost, R = 0.99 exactly; the Wilson
	// interval at n = 216,000 is ±0.00042: dispatch-storage and
	// electric-car (99.5 %) FAIL, consumer-information and metering
	// (99 %) INSUFFICIENT, price (98 %) PASS.
	const n = 2 * hours * 60 * probesPerMin
	m1, m2 := monitorNamed(t, rep, "m1"), monitorNamed(t, rep, "m2")
	if m1.Sent != n || m1.Lost != 0 || m2.Sent != n || m2.Lost != n/100 {
		t.Fatalf("sent/lost m1 %d/%d, m2 %d/%d; want %d/0 and %d/%d", m1.Sent, m1.Lost, m2.Sent, m2.Lost, n, n, n/100)
	}
	want2 := map[string]string{"price": "PASS", "metering": "INSUFFICIENT", "consumer-information": "INSUFFICIENT", "electric-car": "FAIL", "dispatch-storage": "FAIL"}
	for _, v := range m1.Verdicts {
		if v.Verdict != model.VerdictPass || v.Whole.R != 1 || math.Abs(v.Whole.Lower-(1-3.0/n)) > 1e-12 || v.Approx {
			t.Errorf("m1 %s: %s R %v lower %v approx %v; want PASS, 1, %v", v.Profile, v.Verdict, v.Whole.R, v.Whole.Lower, v.Approx, 1-3.0/n)
		}
		if v.Hours != hours {
			t.Errorf("m1 %s: %d hours judged, want %d", v.Profile, v.Hours, hours)
		}
	}
	for _, v := range m2.Verdicts {
		if v.Verdict != want2[v.Profile] || v.Whole.OK != n-n/100 || math.Abs(v.Whole.R-0.99) > 1e-12 {
			t.Errorf("m2 %s: %s, OK %d R %v; want %s, %d, 0.99", v.Profile, v.Verdict, v.Whole.OK, v.Whole.R, want2[v.Profile], n-n/100)
		}
	}
	// RTT: 1 in 50 answered probes at 1 s, the rest 20 ms: the median is
	// 20 ms within the histogram's 1 %, the max exactly 1 s.
	if p50 := m1.RTT.P50Ns; math.Abs(float64(p50)-20e6) > 0.01*20e6 || m1.RTT.MaxNs != 1e9 || m1.RTT.MinNs != 20e6 {
		t.Errorf("m1 RTT p50 %d, min %d, max %d; want 20 ms ±1 %%, 20 ms, 1 s", p50, m1.RTT.MinNs, m1.RTT.MaxNs)
	}
	// Upstream: m1 and m2 (two of acme's three, over half the group) are
	// down together from minute 71 to 75, m3 within it → one event of the
	// three; m4's outage alone → its line.
	if len(rep.Upstream) != 1 {
		t.Fatalf("%d upstream events, want 1: %+v", len(rep.Upstream), rep.Upstream)
	}
	up := rep.Upstream[0]
	if !reflect.DeepEqual(up.Monitors, []string{"m1", "m2", "m3"}) || up.StartNs != t0+71*minNs || up.EndNs != t0+75*minNs ||
		!strings.Contains(up.Rule, "isp=acme (2 of 3)") {
		t.Errorf("upstream event %+v: want m1, m2, m3 from minute 71 to 75 by half of isp=acme", up)
	}
	for _, name := range []string{"m1", "m2", "m3"} {
		m := monitorNamed(t, rep, name)
		if m.Cause != model.CauseUpstream || m.Up.Count != 1 || m.Line.Count != 0 || m.Outages[0].Upstream != 1 {
			t.Errorf("%s: cause %s, upstream %+v, line %+v", name, m.Cause, m.Up, m.Line)
		}
	}
	m4 := monitorNamed(t, rep, "m4")
	if m4.Cause != model.CauseLine || m4.Line.Count != 1 || m4.Line.Seconds != 300 || m4.Up.Count != 0 {
		t.Errorf("m4: cause %s, line %+v, upstream %+v; want line, 1 outage of 300 s", m4.Cause, m4.Line, m4.Up)
	}
	if m1.Grades["C"] != 1 || m1.Worst != "C" {
		t.Errorf("m1 grades %v worst %q, want one C", m1.Grades, m1.Worst)
	}
	// Groups pool their monitors: isp=acme holds m1..m3, 2,160 lost of
	// 648,000; m2 fails two profiles, so acme counts one failing monitor
	// for each of them.
	var acme *model.FleetGroup
	for i, g := range rep.Groups {
		if g.Label == "isp" && g.Value == "acme" {
			acme = &rep.Groups[i]
		}
	}
	if acme == nil || acme.Monitors != 3 || acme.Sent != 3*n || acme.Lost != n/100 {
		t.Fatalf("group isp=acme %+v: want 3 monitors, %d sent, %d lost", acme, 3*n, n/100)
	}
	for i, p := range rep.Profiles {
		want := 0
		if want2[p.Name] == "FAIL" {
			want = 1
		}
		if acme.Failing[i] != want {
			t.Errorf("isp=acme %s: %d failing, want %d", p.Name, acme.Failing[i], want)
		}
	}
}

// testAggregateExact: the hourly aggregate changes where the report reads
// from, not what it says; a minute written into a merged hour is read
// until the hour is merged again.
func testAggregateExact(t *testing.T, url string) {
	st, f := openStore(t, url)
	writeFleet(t, st)
	ctx := context.Background()
	before := report(t, f, whole())
	n, err := Aggregate(ctx, f, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(synthFleet)*2*hours {
		t.Fatalf("merged %d hours, want %d", n, len(synthFleet)*2*hours)
	}
	after := report(t, f, whole())
	if after.Source != "24 hourly aggregates, 0 minute rollups" || before.Source != "0 hourly aggregates, 0 minute rollups" && !strings.HasPrefix(before.Source, "0 hourly") {
		t.Errorf("sources before %q, after %q", before.Source, after.Source)
	}
	before.Source, after.Source = "", ""
	// The SD's sums add in another order: equal to rounding.
	for i := range before.Monitors {
		b, a := &before.Monitors[i].RTT, &after.Monitors[i].RTT
		if math.Abs(b.SDNs-a.SDNs) > 1e-9*b.SDNs {
			t.Errorf("%s: SD %v before, %v after", before.Monitors[i].Name, b.SDNs, a.SDNs)
		}
		b.SDNs = a.SDNs
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the report changed with the aggregate:\nbefore %+v\nafter  %+v", before.Monitors[1], after.Monitors[1])
	}
	if hs, err := f.DirtyHours(ctx, 10); err != nil || len(hs) != 0 {
		t.Fatalf("dirty hours after aggregating: %v, %v", hs, err)
	}
	// The monitor's 4th hour: 60 more minutes of stream 0 of m1, written
	// in two batches; the second hour is not touched.
	ids, _ := st.ListMonitors(ctx)
	extra := rollupsOf(t, 0, synthFleet[0], hours*60, hours*60+60)
	if err := st.Write(ctx, ids["m1"], &store.Batch{Rollups: extra[:30]}); err != nil {
		t.Fatal(err)
	}
	req := Request{FromNs: t0, ToNs: t0 + (hours+1)*3600e9}
	mid := report(t, f, req)
	if got := monitorNamed(t, mid, "m1").Sent; got != 2*hours*60*probesPerMin+30*probesPerMin {
		t.Errorf("m1 sent %d with 30 minutes not yet merged", got)
	}
	if _, err := Aggregate(ctx, f, 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(ctx, ids["m1"], &store.Batch{Rollups: extra[30:]}); err != nil {
		t.Fatal(err)
	}
	rep := report(t, f, req)
	if got := monitorNamed(t, rep, "m1").Sent; got != 2*hours*60*probesPerMin+60*probesPerMin {
		t.Errorf("m1 sent %d after the hour was completed (merged half, marked again)", got)
	}
	if rep.Source != "24 hourly aggregates, 60 minute rollups" {
		t.Errorf("source %q: want the hour marked again read as its 60 minutes", rep.Source)
	}
}

func testLabelFilter(t *testing.T, url string) {
	st, f := openStore(t, url)
	writeFleet(t, st)
	flt, err := ParseFilter([]string{"region=south"})
	if err != nil {
		t.Fatal(err)
	}
	req := whole()
	req.Filter = flt
	rep := report(t, f, req)
	var names []string
	for _, m := range rep.Monitors {
		names = append(names, m.Name)
	}
	if !reflect.DeepEqual(names, []string{"m3", "m4"}) || rep.Filter != "region=south" {
		t.Fatalf("region=south chose %v (filter %q), want m3, m4", names, rep.Filter)
	}
	// Within the filter m3's outage has no company: it is its line's.
	if m3 := monitorNamed(t, rep, "m3"); m3.Cause != model.CauseLine || len(rep.Upstream) != 0 {
		t.Errorf("m3 cause %s with %d upstream events, want line, none", m3.Cause, len(rep.Upstream))
	}
	if m3 := monitorNamed(t, rep, "m3"); m3.Sent != 2*hours*60*probesPerMin {
		t.Errorf("m3 sent %d", m3.Sent)
	}
	flt, _ = ParseFilter([]string{"isp=acme", "isp=other", "region=north"})
	req.Filter = flt
	rep = report(t, f, req)
	if len(rep.Monitors) != 2 || rep.Monitors[0].Name != "m1" || rep.Monitors[1].Name != "m2" {
		t.Fatalf("isp=acme|other, region=north chose %d monitors", len(rep.Monitors))
	}
	flt, _ = ParseFilter([]string{"isp=nobody"})
	req.Filter = flt
	rep = report(t, f, req)
	if len(rep.Monitors) != 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "none of the store's 4 monitors") {
		t.Fatalf("isp=nobody: %d monitors, notes %q", len(rep.Monitors), rep.Notes)
	}
}

func testEmpty(t *testing.T, url string) {
	_, f := openStore(t, url)
	rep := report(t, f, whole())
	if len(rep.Monitors) != 0 || rep.Schema != model.FleetSchema || !slices.Contains(rep.Notes, "the store holds no monitor") {
		t.Fatalf("empty store: %+v", rep)
	}
	if n, err := Aggregate(context.Background(), f, 0); err != nil || n != 0 {
		t.Fatalf("aggregate on an empty store: %d, %v", n, err)
	}
}

// testPartialHours: a range cut inside hours reads the minutes at its
// ends, merged or not.
func testPartialHours(t *testing.T, url string) {
	st, f := openStore(t, url)
	writeFleet(t, st)
	if _, err := Aggregate(context.Background(), f, 0); err != nil {
		t.Fatal(err)
	}
	req := Request{FromNs: t0 + 30*minNs, ToNs: t0 + 150*minNs}
	rep := report(t, f, req)
	if got, want := monitorNamed(t, rep, "m1").Sent, uint64(2*120*probesPerMin); got != want {
		t.Errorf("m1 sent %d over 120 minutes, want %d", got, want)
	}
	if rep.Source != "8 hourly aggregates, 480 minute rollups" {
		t.Errorf("source %q: want hour 1 merged (4 monitors × 2 streams), 60 minutes at the ends × 8 streams", rep.Source)
	}
	req = Request{FromNs: t0 + 10*minNs, ToNs: t0 + 20*minNs}
	if got, want := monitorNamed(t, report(t, f, req), "m2").Sent, uint64(2*10*probesPerMin); got != want {
		t.Errorf("m2 sent %d over 10 minutes within one hour, want %d", got, want)
	}
}

func TestMergeHourRoundTrip(t *testing.T) {
	mins := rollupsOf(t, 0, fleetMon{lossEvery: 7}, 0, 60)
	h, err := MergeHour(t0, mins)
	if err != nil {
		t.Fatal(err)
	}
	u, err := fromHour(h)
	if err != nil {
		t.Fatal(err)
	}
	var sum unit
	for _, r := range mins {
		m, err := fromRollup(r)
		if err != nil {
			t.Fatal(err)
		}
		sum.merge(m)
	}
	sum.startNs = t0
	if !reflect.DeepEqual(u, sum) {
		t.Fatalf("decoded hour differs from the merged minutes:\n%+v\n%+v", u, sum)
	}
	if h.Minutes != 60 || h.Sent != 60*probesPerMin || len(h.Data) > 200 {
		t.Errorf("hour of %d minutes, %d sent, %d bytes of data", h.Minutes, h.Sent, len(h.Data))
	}
	// Corrupt data is an error, never a panic or a large allocation.
	for i := range h.Data {
		c := h
		c.Data = slices.Clone(h.Data)
		c.Data[i] ^= 0xff
		_, _ = fromHour(c)
		c.Data = h.Data[:i]
		if _, err := fromHour(c); err == nil {
			t.Fatalf("hour data cut at %d bytes decoded", i)
		}
	}
}

func TestFindUpstream(t *testing.T) {
	g := func(kv ...string) []groupKey {
		var out []groupKey
		for i := 0; i < len(kv); i += 2 {
			out = append(out, groupKey{kv[i], kv[i+1]})
		}
		return out
	}
	groups := [][]groupKey{g("region", "n"), g("region", "n"), g("region", "n"), g("region", "n"), g("region", "s")}
	// Two of region n's four down at once: half of the group → upstream
	// by share; two touching outages of 0 and 4 make no chain.
	outs := []outage{{mon: 0, start: 10, end: 20}, {mon: 1, start: 15, end: 30}, {mon: 4, start: 100, end: 110}, {mon: 2, start: 30, end: 40}}
	spans := findUpstream(outs, groups, 3, 0.5)
	if len(spans) != 1 || spans[0].start != 15 || spans[0].end != 20 || !reflect.DeepEqual(spans[0].members, []int{0, 1}) || !strings.Contains(spans[0].rule, "region=n") {
		t.Fatalf("spans %+v", spans)
	}
	// With share 1, two of four is not enough, nor two monitors for min 3.
	if spans := findUpstream(outs, groups, 3, 1); len(spans) != 0 {
		t.Fatalf("share 1: spans %+v", spans)
	}
	// Three monitors of no common group down at once: ≥ 3 monitors.
	groups = [][]groupKey{g("isp", "a"), g("isp", "b"), g("isp", "c"), g("isp", "d")}
	outs = []outage{{mon: 0, start: 0, end: 50}, {mon: 1, start: 10, end: 40}, {mon: 2, start: 20, end: 60}, {mon: 3, start: 70, end: 80}}
	spans = findUpstream(outs, groups, 3, 0.5)
	if len(spans) != 1 || spans[0].start != 20 || spans[0].end != 40 || !reflect.DeepEqual(spans[0].members, []int{0, 1, 2}) || spans[0].rule != "≥ 3 monitors" {
		t.Fatalf("three at once: spans %+v", spans)
	}
}

func TestParseFilter(t *testing.T) {
	bad := []string{"isp", "=x", strings.Repeat("k", 300) + "=v", "isp=\x00", "k=" + strings.Repeat("v", 300)}
	for _, b := range bad {
		if _, err := ParseFilter([]string{b}); err == nil {
			t.Errorf("ParseFilter(%q) accepted", b)
		}
	}
	if _, err := ParseFilter(make([]string, 33)); err == nil {
		t.Error("33 terms accepted")
	}
	f, err := ParseFilter([]string{"region=north", "isp=a", "isp=b", "isp=a", "empty="})
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != "empty=, isp=a|b, region=north" {
		t.Errorf("String %q", f.String())
	}
	if !f.Match(map[string]string{"isp": "b", "region": "north", "empty": ""}) || f.Match(map[string]string{"isp": "b", "region": "north"}) {
		t.Error("Match")
	}
}

func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{"isp=acme", "region=north,isp=a", "=", "a==b", "k=v\x00", "ключ=значение"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := strings.Split(s, ",")
		flt, err := ParseFilter(terms)
		if err != nil {
			return
		}
		// A parsed filter prints a form that parses to the same filter
		// (values with '|' or ', ' aside, which the form cannot quote),
		// and matches the labels it names.
		labels := map[string]string{}
		for _, term := range terms {
			k, v, _ := strings.Cut(term, "=")
			labels[k] = v
		}
		if !flt.Match(labels) {
			t.Fatalf("filter %q does not match its own last values %v", flt, labels)
		}
		if len(flt.terms) > MaxFilterTerms {
			t.Fatalf("%d keys", len(flt.terms))
		}
	})
}

// FuzzHourData: any stored hour decodes to an error or to counts that
// agree with each other; never a panic or an allocation past its bounds.
func FuzzHourData(f *testing.F) {
	an, _ := reliability.New(reliability.Config{}, nil)
	var mins []store.Rollup
	r := reliability.NewRoller(an.ThresholdsNs(), func(m model.MonitorRollup) {
		sr, _ := store.RollupFrom(m)
		mins = append(mins, sr)
	})
	for i := range 1200 {
		p := model.ProbeSample{SentNs: t0 + int64(i)*100e6, RTTNs: int64(10e6 + 1e5*(i%37)), Load: model.LoadState(i % 4)}
		if i%13 == 0 {
			p.Lost, p.RTTNs = true, -1
		}
		_ = r.Add(p)
	}
	r.Flush()
	h, err := MergeHour(t0, mins)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(h.Sent, h.Lost, h.Data)
	f.Add(uint64(0), uint64(0), []byte{1, 0, 0, 0})       // an empty hour in the first hourly encoding
	f.Add(uint64(0), uint64(0), []byte{2, 0, 0, 0, 0, 0}) // and in the store's version 2
	f.Fuzz(func(t *testing.T, sent, lost uint64, data []byte) {
		u, err := fromHour(store.HourRow{HourNs: t0, Sent: sent, Lost: lost, Data: data})
		if err != nil {
			return
		}
		var n uint64
		for _, b := range u.Bins {
			n += uint64(b.N)
		}
		if n != u.answered() || len(u.ThresholdsNs) != len(u.Within) {
			t.Fatalf("decoded an inconsistent hour: %d in bins, %d answered", n, u.answered())
		}
		for _, l := range u.ThresholdsNs {
			if w, _ := u.withinAt(l); w > u.answered() {
				t.Fatalf("within %d > answered %d", w, u.answered())
			}
		}
	})
}

// testWriteDuringMerge: a minute written while its hour is being merged
// is either in the merged hour or leaves the hour marked, never lost.
func testWriteDuringMerge(t *testing.T, url string) {
	st, f := openStore(t, url)
	writeFleet(t, st)
	ctx := context.Background()
	ids, err := st.ListMonitors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Hour 3 of m1's stream 0 gets its first 30 minutes now, the next 30
	// from another goroutine while the job merges it.
	extra := rollupsOf(t, 0, synthFleet[0], hours*60, hours*60+60)
	if err := st.Write(ctx, ids["m1"], &store.Batch{Rollups: extra[:30]}); err != nil {
		t.Fatal(err)
	}
	marks, err := f.DirtyHours(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var h store.StreamHour
	for _, m := range marks {
		if m.HourNs == t0+hours*3600e9 {
			h = m
		}
	}
	if h.HourNs == 0 {
		t.Fatalf("the hour written is not marked: %v", marks)
	}
	done := make(chan error, 1)
	var merged int
	err = f.MergeHours(ctx, h.HourNs, []int32{h.Stream}, func(mins []store.Rollup) (store.HourRow, error) {
		go func() { done <- st.Write(ctx, ids["m1"], &store.Batch{Rollups: extra[30:]}) }()
		time.Sleep(50 * time.Millisecond) // let the write start; either order must hold
		merged = len(mins)
		return MergeHour(h.HourNs, mins)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	marks, err = f.DirtyHours(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if merged != 60 && !slices.Contains(marks, h) {
		t.Fatalf("merged %d minutes and the hour is not marked again: the 30 written meanwhile are lost", merged)
	}
	if _, err := Aggregate(ctx, f, 0); err != nil {
		t.Fatal(err)
	}
	rep := report(t, f, Request{FromNs: t0, ToNs: t0 + (hours+1)*3600e9})
	if got, want := monitorNamed(t, rep, "m1").Sent, uint64(2*hours*60*probesPerMin+60*probesPerMin); got != want || rep.Source != "25 hourly aggregates, 0 minute rollups" {
		t.Fatalf("m1 sent %d (want %d), source %q after aggregating again", got, want, rep.Source)
	}
}
