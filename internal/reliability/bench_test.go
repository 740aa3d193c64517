package reliability

import (
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// BenchmarkMonth30Days analyses 30 days of one stream at 10 probes/s
// (25.92 M raw samples, 0.5 % lost, an upload every 6 h) and reports the
// seconds per report and ns per sample. Run with
// go test -run XXX -bench Month30Days -benchtime 1x ./internal/reliability/
// benchSamples is 30 days at 10 probes/s.
var benchSamples = 30 * 24 * 3600 * 10

func BenchmarkMonth30Days(b *testing.B) {
	n := benchSamples
	for b.Loop() {
		start := time.Now()
		a, err := New(Config{Loaded: LoadedConfig{UpBps: 0.7e6}}, streams("a/stamp"))
		if err != nil {
			b.Fatal(err)
		}
		s := model.ProbeSample{RTTNs: 19 * ms, Load: model.LoadIdle}
		for i := range n {
			s.Seq = uint32(i)
			s.SentNs = t0 + int64(i)*100*ms
			s.Lost, s.RTTNs, s.Load = false, 19*ms+int64(i%13)*100_000, model.LoadIdle
			if i%(6*3600*10) < 600 { // one minute of upload every 6 h
				s.Load, s.RTTNs = model.LoadUp, int64(19+adslSawtooth(i)+1)*ms
				if adslSawtooth(i) < 0 {
					s.Lost, s.RTTNs = true, -1
				}
			} else if i%199 == 0 {
				s.Lost, s.RTTNs = true, -1
			}
			if err := a.AddSample(s); err != nil {
				b.Fatal(err)
			}
		}
		rep, err := a.Report(t0, t0+int64(n)*100*ms)
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		b.ReportMetric(el.Seconds(), "s/report")
		b.ReportMetric(float64(el.Nanoseconds())/float64(n), "ns/sample")
		b.Logf("%d samples in %v (%.1f ns/sample), %d events", n, el.Round(time.Millisecond), float64(el.Nanoseconds())/float64(n), len(rep.Events))
	}
}

// BenchmarkRollups30Days analyses the same month from its 43,200 rollups.
func BenchmarkRollups30Days(b *testing.B) {
	a0, _ := New(Config{}, streams("a/stamp"))
	var rolls []model.MonitorRollup
	r := NewRoller(a0.ThresholdsNs(), func(m model.MonitorRollup) { rolls = append(rolls, m) })
	for i := range 30 * 24 * 3600 * 10 {
		if err := r.Add(model.ProbeSample{SentNs: t0 + int64(i)*100*ms, RTTNs: 19*ms + int64(i%97)*ms}); err != nil {
			b.Fatal(err)
		}
	}
	r.Flush()
	b.ResetTimer()
	for b.Loop() {
		a, _ := New(Config{}, streams("a/stamp"))
		for _, ro := range rolls {
			if err := a.AddRollup(ro); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := a.Report(t0, t0); err != nil {
			b.Fatal(err)
		}
	}
}
