package ship

import (
	"context"
	"testing"
	"time"
)

// BenchmarkShip ships an hour of two streams at 2 probes/s (14,400
// probes, 60 counter samples, 120 rollups, an event, a restart, a
// capacity) to a fresh fleet database on the local PostgreSQL and reports
// the rows shipped per second, from the local SQLite to the fleet's
// commits:
//
//	go test -run '^$' -bench BenchmarkShip -benchtime=3x ./internal/monitor/ship/
func BenchmarkShip(b *testing.B) {
	var rows int64
	var took time.Duration
	for range b.N {
		b.StopTimer()
		f := newFleet(b, "home")
		l := newLocal(b, "home")
		l.add(b, 0, 60)
		s := newShipper(b, l, Config{URL: f.url, Token: f.token, Raw: true})
		b.StartTimer()
		start := time.Now()
		for {
			more, err := s.Pass(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if !more {
				break
			}
		}
		took += time.Since(start)
		for _, ts := range s.Status().Tables {
			rows += int64(ts.ShippedRows)
		}
	}
	b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
}
