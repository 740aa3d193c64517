package query

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// BenchmarkReport30Days times `monitor report` over 30 days of one stream
// at 10 probes/s (25.92 M probes) as retention leaves them: raw samples
// for the last day (864,000 rows), per-minute rollups for the 29 days
// before (41,760 rows). The store is generated once per run in a temp dir
// (that takes a while; it is not timed), then each iteration opens it,
// reads and analyses the range, and reports the seconds. Run with
// go test -run XXX -bench Report30Days -benchtime 1x ./internal/monitor/query/
func BenchmarkReport30Days(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "month.db")
	const days = 30
	start := t0 - days*dayNs
	rawFrom := t0 - dayNs
	gen := time.Now()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	mid, err := st.Monitor(ctx, store.Identity{Name: "home"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := st.Streams(ctx, mid, testStreams[:1]); err != nil {
		b.Fatal(err)
	}
	a, _ := reliability.New(reliability.Config{}, testStreams[:1])
	batch := &store.Batch{}
	write := func() {
		if err := st.Write(ctx, mid, batch); err != nil {
			b.Fatal(err)
		}
		batch.Probes, batch.Rollups = batch.Probes[:0], batch.Rollups[:0]
	}
	roller := reliability.NewRoller(a.ThresholdsNs(), func(m model.MonitorRollup) {
		r, err := store.RollupFrom(m)
		if err != nil {
			b.Fatal(err)
		}
		batch.Rollups = append(batch.Rollups, r)
		if len(batch.Rollups) >= 5000 {
			write()
		}
	})
	n := days * 24 * 3600 * 10
	for i := range n {
		p := benchSample(i, start)
		if p.SentNs < rawFrom {
			if err := roller.Add(p); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if len(batch.Rollups) > 0 {
			roller.Flush()
			write()
		}
		batch.Probes = append(batch.Probes, p)
		if len(batch.Probes) >= 50_000 {
			write()
		}
	}
	roller.Flush()
	write()
	st.Close()
	b.Logf("generated %d probes (raw for the last day) in %v", n, time.Since(gen).Round(time.Second))

	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		st, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Run(ctx, st, Request{Name: "home", FromNs: start, ToNs: t0})
		st.Close()
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(t)
		if rep.Stats[0].Sent != uint64(n) || rep.Source != "raw+rollups" {
			b.Fatalf("sent %d, source %s", rep.Stats[0].Sent, rep.Source)
		}
		b.ReportMetric(el.Seconds(), "s/report")
		b.Logf("30 days, %d probes: report in %v, %d events, %d days, %d series points", n, el.Round(time.Millisecond),
			len(rep.Events), len(rep.Daily), len(rep.Series[0].Points))
	}
}

// benchSample is probe i of the synthetic month: 19-20 ms idle, one minute
// of upload every 6 h (a 0-430 ms sawtooth), 0.5 % lost.
func benchSample(i int, start int64) model.ProbeSample {
	p := model.ProbeSample{Seq: uint32(i), SentNs: start + int64(i)*100e6, RTTNs: 19e6 + int64(i%13)*100_000, Load: model.LoadIdle}
	switch {
	case i%(6*3600*10) < 600:
		p.Load, p.RTTNs = model.LoadUp, 19e6+int64(i%430)*1e6
		if i%430 == 429 {
			p.Lost, p.RTTNs = true, -1
		}
	case i%199 == 0:
		p.Lost, p.RTTNs = true, -1
	}
	return p
}
