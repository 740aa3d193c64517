package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// counters are the server's Prometheus metrics, on a registry of its own so
// several servers (tests, the embedded server) never share state. Beside
// the test counters it carries the Go runtime's and the process's own
// metrics (go_goroutines, process_open_fds, process_resident_memory_bytes,
// …), so a leak of goroutines, sockets or memory under slow or malformed
// clients shows on /metrics.
type counters struct {
	reg      *prometheus.Registry
	tests    *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	rejected *prometheus.CounterVec
}

// newCounters also reads adm's and conns' refusal counts on each scrape:
// connections refused by the caps (sonde_connections_refused_total, by
// reason), wrong tokens and token attempts rate-limited.
func newCounters(adm *admission, conns *connLimiter) *counters {
	c := &counters{
		reg: prometheus.NewRegistry(),
		tests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sonde_tests_total", Help: "Tests started, by protocol (sonde, ndt7) and kind.",
		}, []string{"protocol", "kind"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sonde_bytes_total", Help: "Payload bytes moved by load streams, by direction seen from the client.",
		}, []string{"direction"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sonde_errors_total", Help: "Streams or requests that ended with an error, by where it happened.",
		}, []string{"where"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sonde_rejected_total", Help: "Test requests refused by a limit, by HTTP status.",
		}, []string{"status"}),
	}
	c.reg.MustRegister(c.tests, c.bytes, c.errors, c.rejected,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sonde_active_tests", Help: "Tests currently running (sessions and ndt7 tests).",
		}, func() float64 { return float64(adm.activeCount()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sonde_token_failures_total", Help: "Test requests refused (401) for a missing or wrong token.",
		}, func() float64 { f, _ := adm.tokenCounts(); return float64(f) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sonde_token_rate_limited_total",
			Help: "Test requests refused (429) because their IP was out of failed token attempts.",
		}, func() float64 { _, l := adm.tokenCounts(); return float64(l) }))
	for which, name := range capNames {
		c.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "sonde_connections_refused_total",
			Help:        "HTTP connections closed at accept by a connection cap, by reason (per_ip_cap, total_cap).",
			ConstLabels: prometheus.Labels{"reason": name},
		}, func() float64 { return float64(conns.refusedByCap(which)) }))
	}
	return c
}
