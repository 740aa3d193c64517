package monitor

import (
	"strconv"

	"github.com/sonde-project/sonde/internal/metrictext"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
)

// metrics is the daemon's own Prometheus registry (internal/metrictext; no global one): the
// probers' counters read at scrape time, histograms the loop feeds, R(L)
// over the last ten minutes, the store's health, and the Go runtime and
// process collectors.
type metrics struct {
	reg         *metrictext.Registry
	rtt         *metrictext.HistogramVec
	lateness    *metrictext.HistogramSingle
	backlog     *metrictext.ScalarMetric
	storeErrors *metrictext.ScalarMetric
	rel         *metrictext.GaugeVec
	names       []string
}

// rWindowNs is the span of the R(L) gauges.
const rWindowNs = int64(10 * 60e9)

func newMetrics(c *core) *metrics {
	m := &metrics{reg: metrictext.NewRegistry()}
	for _, s := range c.plan.Streams {
		m.names = append(m.names, s.Name)
	}
	m.rtt = metrictext.NewHistogramVec(metrictext.Opts{
		Name: "sonde_monitor_rtt_seconds", Help: "RTT of probes answered in time."},
		metrictext.ExponentialBuckets(0.001, 2, 14), // 1 ms – 8 s
		"stream")
	m.lateness = metrictext.NewHistogram(metrictext.Opts{
		Name: "sonde_monitor_send_lateness_seconds", Help: "How far after its scheduled deadline each probe left."},
		metrictext.ExponentialBuckets(1e-5, 4, 8)) // 10 µs – 164 ms
	m.backlog = metrictext.NewGauge(metrictext.Opts{Name: "sonde_monitor_store_backlog_rows", Help: "Rows held in memory while the store fails."})
	m.storeErrors = metrictext.NewCounter(metrictext.Opts{Name: "sonde_monitor_store_write_errors_total", Help: "Failed store writes."})
	m.rel = metrictext.NewGaugeVec(metrictext.Opts{
		Name: "sonde_monitor_reliability", Help: "R(L): fraction of the last 10 minutes' probes answered in time within threshold L.",
	}, []string{"stream", "threshold_ms"})
	m.reg.MustRegister(m.rtt, m.lateness, m.backlog, m.storeErrors, m.rel,
		metrictext.GoCollector(), metrictext.ProcessCollector(),
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
		m.rtt.WithLabelValue(m.names[s.Stream]).Observe(float64(s.RTTNs) / 1e9)
	}
}

// setReliability sets the R(L) gauges from the detectors' window ss (in
// any order): per stream and threshold, the fraction of the probes sent
// in the rWindowNs before toNs answered in time within it.
func (m *metrics) setReliability(ss *window, thresholds []int64, toNs int64) {
	sent := make([]uint64, len(m.names))
	ok := make([][]uint64, len(m.names))
	for i := range ok {
		ok[i] = make([]uint64, len(thresholds))
	}
	for i := range ss.Len() {
		s := ss.At(i)
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

// Collect writes the probers' counters per stream, then the store's and
// the ring's drops.
func (p *proberCollector) Collect(w *metrictext.Writer) {
	var stats []probe.StreamStats
	if p.c.stats != nil {
		stats = p.c.stats()
	}
	if len(stats) > len(p.names) {
		stats = stats[:len(p.names)]
	}
	for _, f := range []struct {
		name, help string
		v          func(probe.StreamStats) uint64
	}{
		{"sonde_monitor_probes_sent_total", "Probes sent.", func(s probe.StreamStats) uint64 { return s.Sent }},
		{"sonde_monitor_probes_answered_total", "Probes answered in time.", func(s probe.StreamStats) uint64 { return s.Answered }},
		{"sonde_monitor_probes_lost_total", "Probes not answered within the timeout (late ones included).", func(s probe.StreamStats) uint64 { return s.Lost }},
		{"sonde_monitor_probes_late_total", "Probes answered after the timeout.", func(s probe.StreamStats) uint64 { return s.Late }},
		{"sonde_monitor_replies_unmatched_total", "Datagrams that matched no probe.", func(s probe.StreamStats) uint64 { return s.Unmatched }},
		{"sonde_monitor_probes_skipped_total", "Deadlines skipped after a stall of the scheduler.", func(s probe.StreamStats) uint64 { return s.Skipped }},
	} {
		if len(stats) == 0 {
			break
		}
		w.Family(f.name, f.help, metrictext.Counter)
		for i, s := range stats {
			w.Sample(f.name, float64(f.v(s)), "stream", p.names[i])
		}
	}
	p.c.mu.Lock()
	dropped := p.c.status.Store.DroppedRows
	p.c.mu.Unlock()
	w.Family("sonde_monitor_store_dropped_rows_total", "Rows lost because the backlog was full.", metrictext.Counter)
	w.Sample("sonde_monitor_store_dropped_rows_total", float64(dropped))
	w.Family("sonde_monitor_ring_dropped_total", "Samples overwritten in the probe ring before the loop drained them.", metrictext.Counter)
	w.Sample("sonde_monitor_ring_dropped_total", float64(p.c.ring.Dropped()))
}
