package alert

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// BenchmarkEvaluator is the daemon's per-second alert work at 8 streams
// × 10 probes/s with four rules: 80 probes fed, one evaluation.
func BenchmarkEvaluator(b *testing.B) {
	var streams []model.MonitorStream
	for i := range 8 {
		streams = append(streams, model.MonitorStream{Target: "198.18.0.1:862", Kind: model.ProbeSTAMP, DSCP: i, Name: string(rune('a' + i))})
	}
	a := Config{Rules: []Rule{
		{Name: "o", Kind: RuleOutage}, {Name: "s", Kind: RuleOutage, Scope: "stream"},
		{Name: "r", Kind: RuleReliability, Latency: units.Duration(200 * time.Millisecond), Reliability: 0.98, Window: units.Duration(time.Hour)},
		{Name: "b", Kind: RuleBufferbloat},
	}}
	if err := a.Check(nil); err != nil {
		b.Fatal(err)
	}
	e, err := NewEvaluator(a.Rules, "m", streams)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for n := range int64(b.N) {
		for k := range int64(10) {
			ns := t0 + n*1e9 + k*100e6
			for i := range int32(8) {
				e.Add(model.ProbeSample{Stream: i, SentNs: ns, RTTNs: 19e6})
			}
		}
		e.Eval(t0 + (n+1)*1e9)
	}
}

// BenchmarkReplayDay replays a day of one stream at 10 probes/s (864,000
// probes) from SQLite; generating the store is not timed.
func BenchmarkReplayDay(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "m.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	mid, _ := st.Monitor(ctx, store.Identity{Name: "m"})
	if _, err := st.Streams(ctx, mid, twoTargets[:1]); err != nil {
		b.Fatal(err)
	}
	const n = 864_000
	for lo := 0; lo < n; lo += 36_000 {
		batch := &store.Batch{}
		for i := lo; i < lo+36_000; i++ {
			rtt := int64(19e6)
			if i%5000 < 30 {
				rtt = -1
			}
			batch.Probes = append(batch.Probes, model.ProbeSample{Seq: uint32(i), SentNs: t0 + int64(i)*100e6, RTTNs: rtt, Lost: rtt < 0})
		}
		if err := st.Write(ctx, mid, batch); err != nil {
			b.Fatal(err)
		}
	}
	a := Config{Rules: []Rule{{Name: "o", Kind: RuleOutage, For: units.Duration(2 * time.Second)},
		{Name: "r", Kind: RuleReliability, Latency: units.Duration(200 * time.Millisecond), Reliability: 0.995}}}
	if err := a.Check(nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		res, err := Replay(ctx, st, ReplayRequest{FromNs: t0, ToNs: t0 + 24*3600e9, Rules: a.Rules})
		if err != nil || res.Probes != n {
			b.Fatalf("%v, %+v", err, res)
		}
		b.ReportMetric(float64(len(res.Changes)), "changes")
	}
}
