package metrictext

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestExpositionParsesAsPrometheus writes every kind of metric and reads
// the exposition back with Prometheus's own text parser.
func TestExpositionParsesAsPrometheus(t *testing.T) {
	r := NewRegistry()
	c := NewCounter(Opts{Name: "t_events_total", Help: "Events.\nSecond line \\ backslash."})
	g := NewGauge(Opts{Name: "t_level", Help: "Level."})
	h := NewHistogram(Opts{Name: "t_lat_seconds", Help: "Latency."}, ExponentialBuckets(0.001, 10, 3))
	hv := NewHistogramVec(Opts{Name: "t_rtt_seconds", Help: "RTT."}, []float64{0.01, 0.1}, "stream")
	gv := NewGaugeVec(Opts{Name: "t_rel", Help: "R(L)."}, []string{"stream", "threshold_ms"})
	r.MustRegister(c, g, h, hv, gv, GoCollector(), ProcessCollector())
	other := NewRegistry()
	other.MustRegister(NewGauge(Opts{Name: "t_level", Help: "A second family of the same name is dropped."}),
		NewGauge(Opts{Name: "t_other", Help: "Other."}))

	c.Inc()
	c.Add(2.5)
	g.Set(-1.25)
	for _, v := range []float64{0.0005, 0.001, 0.002, 0.05, 3} {
		h.Observe(v)
	}
	hv.WithLabelValue(`a"b\c` + "\n").Observe(0.005)
	hv.WithLabelValue("z").Observe(0.5)
	gv.WithLabelValues("s1", "100").Set(0.98)
	gv.WithLabelValues("s1", "200").Set(math.Inf(1))

	srv := httptest.NewServer(Handler(2, r, other))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("Prometheus's parser: %v\n%s", err, body)
	}
	if f := fams["t_events_total"]; f == nil || f.GetMetric()[0].GetCounter().GetValue() != 3.5 || f.GetHelp() != "Events.\nSecond line \\ backslash." {
		t.Errorf("counter: %v", f)
	}
	if f := fams["t_level"]; f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != -1.25 {
		t.Errorf("gauge (the second registry's family of the same name must be dropped): %v", f)
	}
	if fams["t_other"] == nil {
		t.Error("second registry's family missing")
	}
	hf := fams["t_lat_seconds"].GetMetric()[0].GetHistogram()
	// le is inclusive: 0.0005 and 0.001 in the first bucket.
	want := []uint64{2, 3, 4, 5} // and +Inf
	if len(hf.GetBucket()) != len(want) {
		t.Fatalf("%d buckets, want %d", len(hf.GetBucket()), len(want))
	}
	for i, b := range hf.GetBucket() {
		if b.GetCumulativeCount() != want[i] {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[i])
		}
	}
	if hf.GetSampleCount() != 5 || math.Abs(hf.GetSampleSum()-3.0535) > 1e-12 {
		t.Errorf("histogram count %d sum %g", hf.GetSampleCount(), hf.GetSampleSum())
	}
	rtt := fams["t_rtt_seconds"].GetMetric()
	if len(rtt) != 2 || rtt[0].GetLabel()[0].GetValue() != `a"b\c`+"\n" || rtt[1].GetHistogram().GetBucket()[1].GetCumulativeCount() != 0 {
		t.Errorf("histogram vec: %v", rtt)
	}
	rel := fams["t_rel"].GetMetric()
	if len(rel) != 2 || rel[0].GetGauge().GetValue() != 0.98 || !math.IsInf(rel[1].GetGauge().GetValue(), 1) {
		t.Errorf("gauge vec: %v", rel)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_sys_bytes", "go_memstats_next_gc_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"} {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing", name)
			continue
		}
		m := f.GetMetric()[0]
		if v := m.GetGauge().GetValue() + m.GetCounter().GetValue(); !(v > 0) && name != "process_cpu_seconds_total" {
			t.Errorf("%s = %g", name, v)
		}
	}
	for name := range fams {
		if !model.IsValidLegacyMetricName(name) {
			t.Errorf("bad name %q", name)
		}
	}
}

// TestHandlerBoundsScrapes: past maxInFlight scrapes at once, 503.
func TestHandlerBoundsScrapes(t *testing.T) {
	block, entered := make(chan struct{}), make(chan struct{})
	r := NewRegistry()
	r.MustRegister(CollectorFunc(func(w *Writer) {
		entered <- struct{}{}
		<-block
	}))
	h := Handler(1, r)
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
		close(done)
	}()
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("second scrape: %d, want 503", rec.Code)
	}
	close(block)
	<-done
}
