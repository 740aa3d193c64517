package query

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

const t0 = int64(1_767_225_600_000_000_000) // 2026-01-01 00:00 UTC

var testStreams = []model.MonitorStream{
	{Target: "198.18.0.2:862", Kind: model.ProbeSTAMP, Name: "198.18.0.2:862/stamp"},
	{Target: "198.18.0.3", Kind: model.ProbeICMP, Name: "198.18.0.3/icmp"},
}

// pattern is the known stream: per 100 probes, 88 answered in 20 ms, 10
// in 300 ms (every tenth), one lost (the 50th) and one late (the 51st).
func pattern(stream int32, i int, start int64) model.ProbeSample {
	p := model.ProbeSample{Stream: stream, Seq: uint32(i), SentNs: start + int64(i)*100e6, RTTNs: 20e6, Load: model.LoadIdle}
	switch {
	case i%100 == 50:
		p.RTTNs, p.Lost = -1, true
	case i%100 == 51:
		p.RTTNs, p.Lost, p.Late = 2500e6, true, true
	case i%10 == 9:
		p.RTTNs, p.Load = 300e6, model.LoadUp
	}
	return p
}

// fill writes the known monitor "home": stream 0 as rollups for the five
// minutes before t0 and raw for the ten after, stream 1 raw for one
// minute at 10 ms, a stored outage in the rollup part, one in the raw part
// (which the analysis finds itself) and a restart.
func fill(t testing.TB, st store.Store) {
	ctx := context.Background()
	mid, err := st.Monitor(ctx, store.Identity{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Monitor(ctx, store.Identity{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Streams(ctx, mid, testStreams); err != nil {
		t.Fatal(err)
	}
	a, _ := reliability.New(reliability.Config{}, testStreams)
	b := &store.Batch{}
	r := reliability.NewRoller(a.ThresholdsNs(), func(m model.MonitorRollup) {
		sr, err := store.RollupFrom(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Rollups = append(b.Rollups, sr)
	})
	for i := range 3000 {
		if err := r.Add(pattern(0, i, t0-5*minuteNs)); err != nil {
			t.Fatal(err)
		}
	}
	r.Flush()
	for i := range 6000 {
		b.Probes = append(b.Probes, pattern(0, i, t0))
	}
	for i := range 600 {
		b.Probes = append(b.Probes, model.ProbeSample{Stream: 1, Seq: uint32(i), SentNs: t0 + int64(i)*100e6, RTTNs: 10e6})
	}
	b.Events = []model.MonitorEvent{
		{Kind: model.EventOutage, StartNs: t0 - 4*minuteNs, EndNs: t0 - 4*minuteNs + 5e9, Stream: 0, Text: "stored outage"},
		{Kind: model.EventOutage, StartNs: t0 + minuteNs, EndNs: t0 + minuteNs + 5e9, Stream: -1, Text: "raw-part outage"},
	}
	if err := st.Write(ctx, mid, b); err != nil {
		t.Fatal(err)
	}
	if err := st.Restart(ctx, mid, store.RestartRow{TimeNs: t0 + 2*minuteNs, LastNs: t0 + 2*minuteNs - 3e9, Version: "test"}); err != nil {
		t.Fatal(err)
	}
}

func openFilled(t *testing.T) store.Store {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "m.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fill(t, st)
	return st
}

func TestKnownFigures(t *testing.T) {
	st := openFilled(t)
	rep, err := Run(context.Background(), st, Request{Name: "home", FromNs: t0 - 5*minuteNs, ToNs: t0 + 10*minuteNs})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Monitor != "home" || rep.Source != "raw+rollups" || rep.RawFromNs != t0 || len(rep.Streams) != 2 {
		t.Fatalf("monitor %q, source %q, raw from %d, %d streams", rep.Monitor, rep.Source, rep.RawFromNs, len(rep.Streams))
	}
	if len(rep.Stats) != 2 {
		t.Fatalf("%d stream reports, want 2", len(rep.Stats))
	}
	s := rep.Stats[0]
	if s.Sent != 9000 || s.Lost != 180 || s.Late != 90 {
		t.Errorf("stream 0: sent %d lost %d late %d, want 9000 180 90", s.Sent, s.Lost, s.Late)
	}
	want := map[int64]float64{50e6: 0.88, 100e6: 0.88, 200e6: 0.88, 500e6: 0.98, 1e9: 0.98, 5e9: 0.98}
	for _, r := range s.Reliability {
		if w, ok := want[r.LNs]; ok && math.Abs(r.R-w) > 1e-12 {
			t.Errorf("R(%d ms) = %v, want %v", r.LNs/1e6, r.R, w)
		}
		if r.Lower > r.R || r.Upper < r.R {
			t.Errorf("R(%d ms) = %v outside its bounds [%v, %v]", r.LNs/1e6, r.R, r.Lower, r.Upper)
		}
	}
	// Percentiles come from the rollups' histogram (within 1 %).
	if s.RTT.P50Ns < 19.8e6 || s.RTT.P50Ns > 20.2e6 || s.RTT.MinNs != 20e6 || s.RTT.MaxNs != 300e6 {
		t.Errorf("RTT p50 %d, min %d, max %d", s.RTT.P50Ns, s.RTT.MinNs, s.RTT.MaxNs)
	}
	if wm := 20e6*0.88/0.98 + 300e6*0.10/0.98; math.Abs(s.RTT.MeanNs-wm) > 1 {
		t.Errorf("RTT mean %v, want %v", s.RTT.MeanNs, wm)
	}
	// Per load state: the raw part labels 300 ms probes up-saturated.
	var up *model.LoadReliability
	for i := range s.ByLoad {
		if s.ByLoad[i].Load == "up-saturated" {
			up = &s.ByLoad[i]
		}
	}
	if up == nil || up.Sent != 900 || up.Reliability[2].R != 0 {
		t.Errorf("up-saturated: %+v", up)
	}
	if s1 := rep.Stats[1]; s1.Sent != 600 || s1.Lost != 0 || s1.RTT.P50Ns != 10e6 || s1.Reliability[0].R != 1 {
		t.Errorf("stream 1: %+v", s1)
	}
	// Daily: the rollup minutes fall on the day before t0 (midnight).
	if len(rep.Daily) != 3 || rep.Daily[0].Sent != 3000 || rep.Daily[1].Sent != 6000 || rep.Daily[1].Lost != 120 ||
		rep.Daily[1].DayNs != t0 || rep.Daily[1].Reliability[1].R != 0.88 || rep.Daily[2].Stream != 1 {
		t.Errorf("daily %+v", rep.Daily)
	}
	if len(rep.Series) != 2 || len(rep.Series[0].Points) != 15 || rep.Series[0].BucketNs != minuteNs {
		t.Errorf("series: %d streams", len(rep.Series))
	} else if p := rep.Series[0].Points[0]; p.Sent != 600 || p.Lost != 12 || p.P99Ns < 297e6 || p.P99Ns > 303e6 {
		t.Errorf("first minute %+v", p)
	}
	loads := map[string]uint64{}
	for _, c := range rep.CDFs {
		if c.Stream == 0 {
			loads[c.Load] = c.N
			if last := c.Points[len(c.Points)-1]; last.Fraction != 1 {
				t.Errorf("CDF %s ends at %v", c.Load, last.Fraction)
			}
		}
	}
	if loads["all"] != 8820 || loads["idle"] != 5280 || loads["up-saturated"] != 600 {
		t.Errorf("CDF sizes %v", loads)
	}
	// Events: the stored outage of the rollup part and the restart; not
	// the stored one of the raw part.
	var kinds []string
	for _, e := range rep.Events {
		kinds = append(kinds, string(e.Kind)+":"+e.Text)
	}
	var stored, rawStored, restart bool
	for _, e := range rep.Events {
		stored = stored || e.Text == "stored outage"
		rawStored = rawStored || e.Text == "raw-part outage"
		restart = restart || e.Kind == model.EventRestart
	}
	if !stored || rawStored || !restart {
		t.Errorf("events %q", kinds)
	}
}

func TestRawOnly(t *testing.T) {
	st := openFilled(t)
	rep, err := Run(context.Background(), st, Request{Name: "home", FromNs: t0, ToNs: t0 + 10*minuteNs})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Stats[0]
	if rep.Source != "raw" || s.Sent != 6000 || s.Lost != 120 || s.RTT.P50Ns != 20e6 || s.RTT.Approx {
		t.Errorf("source %q, sent %d, lost %d, p50 %d approx %v", rep.Source, s.Sent, s.Lost, s.RTT.P50Ns, s.RTT.Approx)
	}
}

func TestNoData(t *testing.T) {
	st := openFilled(t)
	ctx := context.Background()
	for name, req := range map[string]Request{
		"unknown monitor": {Name: "nope", FromNs: t0, ToNs: t0 + minuteNs},
		"no name, two":    {FromNs: t0, ToNs: t0 + minuteNs},
		"empty range":     {Name: "home", FromNs: t0 + dayNs, ToNs: t0 + 2*dayNs},
		"no streams":      {Name: "other", FromNs: t0, ToNs: t0 + minuteNs},
	} {
		if _, err := Run(ctx, st, req); !errors.Is(err, ErrNoData) {
			t.Errorf("%s: %v, want ErrNoData", name, err)
		}
	}
	for name, req := range map[string]Request{
		"reversed": {Name: "home", FromNs: t0, ToNs: t0 - 1},
		"too long": {Name: "home", FromNs: t0 - MaxRangeNs - 1, ToNs: t0},
	} {
		if _, err := Run(ctx, st, req); err == nil || errors.Is(err, ErrNoData) {
			t.Errorf("%s: %v, want a range error", name, err)
		}
	}
}

// TestDetailSeries checks the dashboard's detail on the known stream:
// 5 buckets of 3 minutes over rollups and raw samples alike, each with the
// smoke quantiles, the counts within each threshold and per load state.
func TestDetailSeries(t *testing.T) {
	st := openFilled(t)
	rep, err := Run(context.Background(), st, Request{Name: "home", FromNs: t0 - 5*minuteNs, ToNs: t0 + 10*minuteNs, Points: 5, Detail: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.ThresholdsNs) == 0 || len(rep.Series) != 2 {
		t.Fatalf("thresholds %v, %d series", rep.ThresholdsNs, len(rep.Series))
	}
	s := rep.Series[0]
	if s.BucketNs != 3*minuteNs || len(s.Points) != 5 {
		t.Fatalf("bucket %d ns, %d points", s.BucketNs, len(s.Points))
	}
	l50 := slicesIndex(rep.ThresholdsNs, 50e6)
	l500 := slicesIndex(rep.ThresholdsNs, 500e6)
	for i, p := range s.Points {
		// Every bucket is 3 minutes of the pattern: 1800 probes, 1584 in
		// 20 ms, 180 in 300 ms (above the p90 of the 1764 answered), 18 lost
		// and 18 late.
		if p.Sent != 1800 || p.Lost != 36 {
			t.Errorf("bucket %d: sent %d lost %d", i, p.Sent, p.Lost)
		}
		if len(p.SmokeNs) != len(model.SmokeQuantiles) || p.SmokeNs[0] != 20e6 || p.SmokeNs[6] != 300e6 ||
			p.SmokeNs[3] < 19.8e6 || p.SmokeNs[3] > 20.2e6 || p.SmokeNs[5] < 297e6 || p.SmokeNs[5] > 300e6 {
			t.Errorf("bucket %d smoke %v", i, p.SmokeNs)
		}
		for k := 1; k < len(p.SmokeNs); k++ {
			if p.SmokeNs[k] < p.SmokeNs[k-1] {
				t.Errorf("bucket %d smoke not ordered: %v", i, p.SmokeNs)
			}
		}
		if len(p.Within) != len(rep.ThresholdsNs) || p.Within[l50] != 1584 || p.Within[l500] != 1764 {
			t.Errorf("bucket %d within %v", i, p.Within)
		}
		var n uint32
		for _, c := range p.Load {
			n += c
		}
		if len(p.Load) != len(model.LoadStates) || n != p.Sent || p.Load[0] != 1620 || p.Load[2] != 180 {
			t.Errorf("bucket %d load %v", i, p.Load)
		}
	}
	// Without Detail the series is the report's as before.
	plain, err := Run(context.Background(), st, Request{Name: "home", FromNs: t0 - 5*minuteNs, ToNs: t0 + 10*minuteNs})
	if err != nil {
		t.Fatal(err)
	}
	if p := plain.Series[0].Points[0]; p.SmokeNs != nil || p.Within != nil || p.Load != nil || plain.ThresholdsNs != nil {
		t.Errorf("detail without asking: %+v", p)
	}
	if _, err := Run(context.Background(), st, Request{Name: "home", FromNs: t0, ToNs: t0 + minuteNs, Points: MaxSeriesPoints + 1}); err == nil {
		t.Error("points past the bound accepted")
	}
}

func slicesIndex(s []int64, v int64) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestRestartOnce: the daemon stores a restart both as a row of the
// restarts table and as an event spanning the gap before it (core.restart);
// the report shows it once, as the daemon's event.
func TestRestartOnce(t *testing.T) {
	st := openFilled(t)
	ctx := context.Background()
	mid, err := st.Monitor(ctx, store.Identity{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	now, last := t0+5*minuteNs, t0+5*minuteNs-7e9
	if err := st.Restart(ctx, mid, store.RestartRow{TimeNs: now, LastNs: last, Version: "test"}); err != nil {
		t.Fatal(err)
	}
	ev := model.MonitorEvent{Kind: model.EventRestart, StartNs: last, EndNs: now, Stream: -1, Text: "monitor started again after a gap of 7s"}
	if err := st.Write(ctx, mid, &store.Batch{Events: []model.MonitorEvent{ev}}); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(ctx, st, Request{Name: "home", FromNs: t0 - 5*minuteNs, ToNs: t0 + 10*minuteNs})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range rep.Events {
		if e.Kind == model.EventRestart {
			got = append(got, e.Text)
		}
	}
	// Two restarts: fill's (a row only) and this one (row and event).
	if len(got) != 2 || got[1] != ev.Text && got[0] != ev.Text {
		t.Errorf("restart events %q, want fill's and %q once each", got, ev.Text)
	}
}
