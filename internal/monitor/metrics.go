package monitor

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sonde-project/sonde/internal/model"
)

// metrics is the daemon's own Prometheus registry (no global one): the
// probers' counters read at scrape time, histograms the loop feeds, R(L)
// over the last ten minutes, the store's health, and the Go runtime and
// process collectors.
type metrics struct {
	reg         *prometheus.Registry
	rtt         *prometheus.HistogramVec
	lateness    prometheus.Histogram
	backlog     prometheus.Gauge
	storeErrors prometheus.Counter
	rel         *prometheus.GaugeVec
	names       []string
}

// rWindowNs is the span of the R(L) gauges.
const rWindowNs = int64(10 * 60e9)

func newMetrics(c *core) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	for _, s := range c.plan.Streams {
		m.names = append(m.names, s.Name)
	}
	m.rtt = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sonde_monitor_rtt_seconds", Help: "RTT of probes answered in time.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1 ms – 8 s
	}, []string{"stream"})
	m.lateness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "sonde_monitor_send_lateness_seconds", Help: "How far after its scheduled deadline each probe left.",
		Buckets: prometheus.ExponentialBuckets(1e-5, 4, 8), // 10 µs – 164 ms
	})
	m.backlog = prometheus.NewGauge(prometheus.GaugeOpts{Name: "sonde_monitor_store_backlog_rows", Help: "Rows held in memory while the store fails."})
	m.storeErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "sonde_monitor_store_write_errors_total", Help: "Failed store writes."})
	m.rel = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sonde_monitor_reliability", Help: "R(L): fraction of the last 10 minutes' probes answered in time within threshold L.",
	}, []string{"stream", "threshold_ms"})
	m.reg.MustRegister(m.rtt, m.lateness, m.backlog, m.storeErrors, m.rel,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&proberCollector{c: c, names: m.names})
	return m
}

// observe feeds one drained sample.
func (m *metrics) observe(s model.ProbeSample) {
	if s.Late {
		return // its send was observed with its lost sample
	}
	m.lateness.Observe(float64(s.LatenessNs) / 1e9)
	if !s.Lost && s.RTTNs >= 0 && int(s.Stream) < len(m.names) {
		m.rtt.WithLabelValues(m.names[s.Stream]).Observe(float64(s.RTTNs) / 1e9)
	}
}

// setReliability sets the R(L) gauges from the detectors' window ss (in
// any order): per stream and threshold, the fraction of the probes sent
// in the rWindowNs before toNs answered in time within it.
func (m *metrics) setReliability(ss []winSample, thresholds []int64, toNs int64) {
	sent := make([]uint64, len(m.names))
	ok := make([][]uint64, len(m.names))
	for i := range ok {
		ok[i] = make([]uint64, len(thresholds))
	}
	for _, s := range ss {
		if s.SentNs < toNs-rWindowNs || s.SentNs >= toNs || int(s.Stream) >= len(m.names) || s.Stream < 0 {
			continue
		}
		sent[s.Stream]++
		if s.Lost || s.Late || s.RTTNs < 0 {
			continue
		}
		for j, l := range thresholds {
			if s.RTTNs <= l {
				ok[s.Stream][j]++
			}
		}
	}
	for i, n := range m.names {
		if sent[i] == 0 {
			continue
		}
		for j, l := range thresholds {
			m.rel.WithLabelValues(n, strconv.FormatFloat(float64(l)/1e6, 'f', -1, 64)).Set(float64(ok[i][j]) / float64(sent[i]))
		}
	}
}

// proberCollector reads the probers' counters at scrape time.
type proberCollector struct {
	c     *core
	names []string
}

var (
	descSent      = prometheus.NewDesc("sonde_monitor_probes_sent_total", "Probes sent.", []string{"stream"}, nil)
	descAnswered  = prometheus.NewDesc("sonde_monitor_probes_answered_total", "Probes answered in time.", []string{"stream"}, nil)
	descLost      = prometheus.NewDesc("sonde_monitor_probes_lost_total", "Probes not answered within the timeout (late ones included).", []string{"stream"}, nil)
	descLate      = prometheus.NewDesc("sonde_monitor_probes_late_total", "Probes answered after the timeout.", []string{"stream"}, nil)
	descUnmatched = prometheus.NewDesc("sonde_monitor_replies_unmatched_total", "Datagrams that matched no probe.", []string{"stream"}, nil)
	descSkipped   = prometheus.NewDesc("sonde_monitor_probes_skipped_total", "Deadlines skipped after a stall of the scheduler.", []string{"stream"}, nil)
	descDropped   = prometheus.NewDesc("sonde_monitor_store_dropped_rows_total", "Rows lost because the backlog was full.", nil, nil)
	descRing      = prometheus.NewDesc("sonde_monitor_ring_dropped_total", "Samples overwritten in the probe ring before the loop drained them.", nil, nil)
)

func (p *proberCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSent, descAnswered, descLost, descLate, descUnmatched, descSkipped, descDropped, descRing} {
		ch <- d
	}
}

func (p *proberCollector) Collect(ch chan<- prometheus.Metric) {
	if p.c.stats != nil {
		for i, s := range p.c.stats() {
			if i >= len(p.names) {
				break
			}
			n := p.names[i]
			ch <- prometheus.MustNewConstMetric(descSent, prometheus.CounterValue, float64(s.Sent), n)
			ch <- prometheus.MustNewConstMetric(descAnswered, prometheus.CounterValue, float64(s.Answered), n)
			ch <- prometheus.MustNewConstMetric(descLost, prometheus.CounterValue, float64(s.Lost), n)
			ch <- prometheus.MustNewConstMetric(descLate, prometheus.CounterValue, float64(s.Late), n)
			ch <- prometheus.MustNewConstMetric(descUnmatched, prometheus.CounterValue, float64(s.Unmatched), n)
			ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(s.Skipped), n)
		}
	}
	p.c.mu.Lock()
	dropped := p.c.status.Store.DroppedRows
	p.c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(dropped))
	ch <- prometheus.MustNewConstMetric(descRing, prometheus.CounterValue, float64(p.c.ring.Dropped()))
}
