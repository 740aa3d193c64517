package query

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// adsl is one stream of seed 001's uplink as a daemon would have stored
// it: from start, idle probes at 20 ms for idleS seconds, then an upload
// whose sawtooth climbs from 300 to 450 ms (buffer ≈ 0.7 Mbit/s × 430 ms
// = 301 kbit), for loadS seconds; raw samples and, like the daemon, the
// rollup of every minute.
func adsl(t *testing.T, st store.Store, name string, start int64, idleS, loadS int) int64 {
	t.Helper()
	ctx := context.Background()
	mid, err := st.Monitor(ctx, store.Identity{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Streams(ctx, mid, testStreams[:1]); err != nil {
		t.Fatal(err)
	}
	a, _ := reliability.New(reliability.Config{}, testStreams[:1])
	b := &store.Batch{}
	r := reliability.NewRoller(a.ThresholdsNs(), func(m model.MonitorRollup) {
		sr, err := store.RollupFrom(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Rollups = append(b.Rollups, sr)
	})
	for i := range (idleS + loadS) * 10 {
		p := model.ProbeSample{Seq: uint32(i), SentNs: start + int64(i)*100e6, RTTNs: 20e6, Load: model.LoadIdle}
		if i >= idleS*10 {
			p.RTTNs, p.Load = 300e6+int64(i%20)*150e6/19, model.LoadUp
		}
		b.Probes = append(b.Probes, p)
		if err := r.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	r.Flush()
	if err := st.Write(ctx, mid, b); err != nil {
		t.Fatal(err)
	}
	return mid
}

func openStore(t *testing.T) store.Store {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func upEpisode(t *testing.T, rep *model.MonitorReport) model.MonitorEvent {
	t.Helper()
	var out []model.MonitorEvent
	for _, e := range rep.Events {
		if e.Kind == model.EventLoaded {
			out = append(out, e)
		}
	}
	if len(out) != 1 || !slices.Contains(out[0].Flags, "up-saturated") {
		t.Fatalf("loaded episodes %+v, want one up-saturated", out)
	}
	return out[0]
}

// TestRecordedCapacity: a loaded episode read from raw samples gets the
// inferred buffer, BDP and oversizing from the capacity the daemon
// recorded (the row in effect at the episode's start, recorded before the
// range and changed after it), the override replaces it, and without
// either the report says why there is no buffer.
func TestRecordedCapacity(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	mid := adsl(t, st, "home", t0, 60, 60)
	for _, r := range []store.CapacityRow{
		{FromNs: t0 - 3600e9, UpBps: 0.7e6, DownBps: 8e6, UpSource: store.CapacityConfigured, DownSource: store.CapacityConfigured},
		{FromNs: t0 + 150e9, UpBps: 5e6, DownBps: 50e6, UpSource: store.CapacityLearnt, DownSource: store.CapacityLearnt},
	} {
		if err := st.SetCapacity(ctx, mid, r); err != nil {
			t.Fatal(err)
		}
	}
	req := Request{FromNs: t0, ToNs: t0 + 5*minuteNs}
	for _, c := range []struct {
		name    string
		up      float64
		capBps  float64
		noteHas string
	}{
		{"recorded", 0, 0.7e6, "up 700.0 kbit/s configured, 5.0 Mbit/s learnt; down 8.0 Mbit/s configured"},
		{"override", 1.4e6, 1.4e6, "up 1.4 Mbit/s given; down 8.0 Mbit/s configured"},
	} {
		req.UpBps = c.up
		rep, err := Run(ctx, st, req)
		if err != nil {
			t.Fatal(err)
		}
		ep := upEpisode(t, rep)
		d := ep.Detail
		if d["capacity_bps"] != c.capBps {
			t.Errorf("%s: capacity %g bit/s, want %g", c.name, d["capacity_bps"], c.capBps)
		}
		want := c.capBps * 0.430
		if math.Abs(d["buffer_bits"]-want)/want > 0.01 {
			t.Errorf("%s: inferred buffer %.0f bit, want %.0f (± 1 %%)", c.name, d["buffer_bits"], want)
		}
		if bdp := c.capBps * 0.020; math.Abs(d["bdp_bits"]-bdp) > 1 || math.Abs(d["oversize"]-want/bdp)/(want/bdp) > 0.01 {
			t.Errorf("%s: BDP %.0f bit, oversize %.1f; want %.0f, %.1f", c.name, d["bdp_bits"], d["oversize"], bdp, want/bdp)
		}
		if !strings.Contains(ep.Text, "buffer ≈") {
			t.Errorf("%s: episode text %q has no buffer", c.name, ep.Text)
		}
		if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, c.noteHas) }) {
			t.Errorf("%s: notes %q, want one naming %q", c.name, rep.Notes, c.noteHas)
		}
	}

	// Nothing recorded, nothing given: no buffer, and a note says why.
	st2 := openStore(t)
	adsl(t, st2, "home", t0, 60, 60)
	rep, err := Run(ctx, st2, Request{FromNs: t0, ToNs: t0 + 5*minuteNs})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := upEpisode(t, rep).Detail["buffer_bits"]; ok {
		t.Error("an inferred buffer without any capacity")
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "no link capacity") }) {
		t.Errorf("notes %q, want one saying no capacity is known", rep.Notes)
	}
	// Given only: it holds over the whole range.
	rep, err = Run(ctx, st2, Request{FromNs: t0, ToNs: t0 + 5*minuteNs, UpBps: 0.7e6})
	if err != nil {
		t.Fatal(err)
	}
	if b := upEpisode(t, rep).Detail["buffer_bits"]; math.Abs(b-301e3)/301e3 > 0.01 {
		t.Errorf("given 700 kbit/s on a store without capacities: buffer %.0f bit, want 301 kbit", b)
	}
}

// TestFirstMinuteReadsRaw: a fresh store whose first probe is 30 s into a
// minute (rolled up, as the daemon does) reads a phase of that minute
// from its raw samples, not the whole minute's rollup; a minute whose
// start retention removed is still read from its rollup.
func TestFirstMinuteReadsRaw(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	start := t0 + 30e9
	adsl(t, st, "home", start, 15, 75) // idle 30–45 s, upload 45 s–2 min
	// The idle phase alone, inside the first minute.
	rep, err := Run(ctx, st, Request{FromNs: start, ToNs: start + 15e9})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Stats[0]
	if s.Sent != 150 || s.RTT.P50Ns != 20e6 || rep.RawFromNs != start {
		t.Errorf("idle phase: sent %d, median %.1f ms, raw from %+d s; want 150, 20 ms, raw from its start",
			s.Sent, float64(s.RTT.P50Ns)/1e6, (rep.RawFromNs-start)/1e9)
	}
	// A range from before the first probe: still raw, no retention note.
	rep, err = Run(ctx, st, Request{FromNs: t0 - minuteNs, ToNs: start + 15e9})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Stats[0]; s.Sent != 150 || s.RTT.P50Ns != 20e6 || rep.RawFromNs != t0 {
		t.Errorf("from before the first probe: sent %d, median %.1f ms, raw from %d; want 150, 20 ms, %d", s.Sent, float64(s.RTT.P50Ns)/1e6, rep.RawFromNs, t0)
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "retention") || strings.Contains(n, "rollups") {
			t.Errorf("note %q on a store read raw throughout", n)
		}
	}

	// Retention removed the first 20 s of the minute t0+1 min (raw from
	// t0+80 s): that minute comes from its rollup, whole, and raw
	// samples from the next minute.
	if _, err := st.Retain(ctx, store.Retention{Raw: 1}, t0+80e9+1); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(ctx, st, Request{FromNs: t0, ToNs: t0 + 3*minuteNs})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Stats[0]; s.Sent != 900 || rep.RawFromNs != t0+2*minuteNs {
		t.Errorf("after retention: sent %d, raw from %+d s; want 900 (the rollups of minutes 0 and 1, raw after), raw from 120 s", s.Sent, (rep.RawFromNs-t0)/1e9)
	}
}
