// Package metrictext writes metrics in the Prometheus text exposition
// format (version 0.0.4): counters, gauges and histograms, with or without
// labels, the Go runtime's and the process's usual series, and an HTTP
// handler for /metrics. It is what the monitor daemon serves its /metrics
// with: prometheus/client_golang and the protobuf code it pulls in were
// 2.36 MB of the arm64 monitor-only executable (docs/monitor.md, "Where to run
// it"), and the daemon needs only this much of them. The format:
// https://prometheus.io/docs/instrumenting/exposition_formats/.
package metrictext

import (
	"bufio"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Collector writes its families when the registry is scraped.
type Collector interface {
	Collect(w *Writer)
}

// CollectorFunc adapts a function to Collector.
type CollectorFunc func(w *Writer)

// Collect calls f.
func (f CollectorFunc) Collect(w *Writer) { f(w) }

// Registry is an ordered set of collectors; it is safe for concurrent use.
type Registry struct {
	mu sync.Mutex
	cs []Collector
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// MustRegister adds collectors, written in the order registered.
func (r *Registry) MustRegister(cs ...Collector) {
	r.mu.Lock()
	r.cs = append(r.cs, cs...)
	r.mu.Unlock()
}

func (r *Registry) collect(w *Writer) {
	r.mu.Lock()
	cs := slices.Clone(r.cs)
	r.mu.Unlock()
	for _, c := range cs {
		c.Collect(w)
	}
}

// ContentType is the media type of the text format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Handler serves the registries' families, in order, as one exposition;
// at most maxInFlight scrapes run at once (more get 503).
func Handler(maxInFlight int, rs ...*Registry) http.Handler {
	sem := make(chan struct{}, max(maxInFlight, 1))
	return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		default:
			http.Error(rw, "too many scrapes at once", http.StatusServiceUnavailable)
			return
		}
		rw.Header().Set("Content-Type", ContentType)
		bw := bufio.NewWriter(rw)
		w := &Writer{w: bw, seen: map[string]bool{}}
		for _, r := range rs {
			if r != nil {
				r.collect(w)
			}
		}
		_ = bw.Flush()
	})
}

// Writer writes one exposition. A family's HELP and TYPE lines are
// written once, at its first Family call; its samples must follow it.
type Writer struct {
	w    *bufio.Writer
	seen map[string]bool
	skip bool // the current family was already written: drop its samples
}

// Metric types.
const (
	Counter   = "counter"
	Gauge     = "gauge"
	Histogram = "histogram"
)

// Family starts a family; a name already written (a second registry
// naming it) drops the new family's samples, as a merged exposition may
// hold each family once.
func (w *Writer) Family(name, help, typ string) {
	if w.seen[name] {
		w.skip = true
		return
	}
	w.seen[name], w.skip = true, false
	w.w.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n")
	w.w.WriteString("# TYPE " + name + " " + typ + "\n")
}

// Sample writes one sample of the current family: labels are name, value
// pairs.
func (w *Writer) Sample(name string, v float64, labels ...string) {
	if w.skip {
		return
	}
	w.w.WriteString(name)
	if len(labels) >= 2 {
		w.w.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				w.w.WriteByte(',')
			}
			w.w.WriteString(labels[i] + `="` + escapeLabel(labels[i+1]) + `"`)
		}
		w.w.WriteByte('}')
	}
	w.w.WriteByte(' ')
	w.w.WriteString(FormatValue(v))
	w.w.WriteByte('\n')
}

// FormatValue is a sample value as the text format spells it.
func FormatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// Opts name and describe a metric.
type Opts struct {
	Name, Help string
}

// atomicFloat is a float64 updated without a lock.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) load() float64   { return math.Float64frombits(f.bits.Load()) }
func (f *atomicFloat) store(v float64) { f.bits.Store(math.Float64bits(v)) }
func (f *atomicFloat) add(d float64) {
	for {
		old := f.bits.Load()
		if f.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// ScalarMetric is a counter or a gauge without labels.
type ScalarMetric struct {
	opts Opts
	typ  string
	v    atomicFloat
}

// NewCounter returns a counter.
func NewCounter(o Opts) *ScalarMetric { return &ScalarMetric{opts: o, typ: Counter} }

// NewGauge returns a gauge.
func NewGauge(o Opts) *ScalarMetric { return &ScalarMetric{opts: o, typ: Gauge} }

// Inc adds 1.
func (m *ScalarMetric) Inc() { m.v.add(1) }

// Add adds d (a counter's d must not be negative).
func (m *ScalarMetric) Add(d float64) { m.v.add(d) }

// Set sets a gauge.
func (m *ScalarMetric) Set(v float64) { m.v.store(v) }

// Value reads the metric.
func (m *ScalarMetric) Value() float64 { return m.v.load() }

// Collect writes the metric.
func (m *ScalarMetric) Collect(w *Writer) {
	w.Family(m.opts.Name, m.opts.Help, m.typ)
	w.Sample(m.opts.Name, m.v.load())
}

// GaugeVec is a gauge per combination of label values.
type GaugeVec struct {
	opts   Opts
	labels []string
	mu     sync.Mutex
	m      map[string]*gaugeChild
}

type gaugeChild struct {
	values []string
	g      ScalarMetric
}

// NewGaugeVec returns a gauge vector with the label names given.
func NewGaugeVec(o Opts, labels []string) *GaugeVec {
	return &GaugeVec{opts: o, labels: labels, m: map[string]*gaugeChild{}}
}

// WithLabelValues returns the gauge of the values (one per label name).
func (v *GaugeVec) WithLabelValues(values ...string) *ScalarMetric {
	key := strings.Join(values, "\xff")
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.m[key]
	if !ok {
		c = &gaugeChild{values: slices.Clone(values), g: ScalarMetric{opts: v.opts, typ: Gauge}}
		v.m[key] = c
	}
	return &c.g
}

// Collect writes the gauges in the order of their label values.
func (v *GaugeVec) Collect(w *Writer) {
	_, cs := sortedChildren(&v.mu, v.m)
	if len(cs) == 0 {
		return
	}
	w.Family(v.opts.Name, v.opts.Help, Gauge)
	for _, c := range cs {
		w.Sample(v.opts.Name, c.g.v.load(), pairs(v.labels, c.values)...)
	}
}

// sortedChildren snapshots a vector's children under its lock, in the
// order of their keys, so that a scrape writes them in a stable order.
func sortedChildren[T any](mu *sync.Mutex, m map[string]T) ([]string, []T) {
	mu.Lock()
	defer mu.Unlock()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	vs := make([]T, len(keys))
	for i, k := range keys {
		vs[i] = m[k]
	}
	return keys, vs
}

func pairs(names, values []string) []string {
	ls := make([]string, 0, 2*len(names)+2)
	for i, n := range names {
		val := ""
		if i < len(values) {
			val = values[i]
		}
		ls = append(ls, n, val)
	}
	return ls
}

// ExponentialBuckets returns n upper bounds: start, start×factor, …
func ExponentialBuckets(start, factor float64, n int) []float64 {
	bs := make([]float64, n)
	for i := range bs {
		bs[i] = start * math.Pow(factor, float64(i))
	}
	return bs
}

// HistogramMetric counts observations into fixed buckets (cumulative at
// exposition, as the format wants) with their sum and count.
type HistogramMetric struct {
	upper  []float64
	counts []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sum    atomicFloat
}

func newHistogram(upper []float64) *HistogramMetric {
	return &HistogramMetric{upper: upper, counts: make([]atomic.Uint64, len(upper)+1)}
}

// Observe counts v.
func (h *HistogramMetric) Observe(v float64) {
	i, _ := slices.BinarySearch(h.upper, v) // first bound ≥ v: le is inclusive
	h.counts[i].Add(1)
	h.sum.add(v)
}

func (h *HistogramMetric) write(w *Writer, name string, labels []string) {
	var cum uint64
	ls := append(slices.Clone(labels), "le", "")
	for i := range h.counts {
		cum += h.counts[i].Load()
		le := math.Inf(1)
		if i < len(h.upper) {
			le = h.upper[i]
		}
		ls[len(ls)-1] = FormatValue(le)
		w.Sample(name+"_bucket", float64(cum), ls...)
	}
	w.Sample(name+"_sum", h.sum.load(), labels...)
	w.Sample(name+"_count", float64(cum), labels...)
}

// HistogramSingle is a histogram without labels.
type HistogramSingle struct {
	*HistogramMetric
	opts Opts
}

// NewHistogram returns a histogram with the upper bounds given (sorted).
func NewHistogram(o Opts, upper []float64) *HistogramSingle {
	return &HistogramSingle{HistogramMetric: newHistogram(upper), opts: o}
}

// Collect writes the histogram.
func (h *HistogramSingle) Collect(w *Writer) {
	w.Family(h.opts.Name, h.opts.Help, Histogram)
	h.write(w, h.opts.Name, nil)
}

// HistogramVec is a histogram per value of one label.
type HistogramVec struct {
	opts  Opts
	label string
	upper []float64
	mu    sync.Mutex
	m     map[string]*HistogramMetric
}

// NewHistogramVec returns a histogram vector over one label.
func NewHistogramVec(o Opts, upper []float64, label string) *HistogramVec {
	return &HistogramVec{opts: o, label: label, upper: upper, m: map[string]*HistogramMetric{}}
}

// WithLabelValue returns the histogram of a label value.
func (v *HistogramVec) WithLabelValue(value string) *HistogramMetric {
	v.mu.Lock()
	defer v.mu.Unlock()
	h, ok := v.m[value]
	if !ok {
		h = newHistogram(v.upper)
		v.m[value] = h
	}
	return h
}

// Collect writes the histograms in the order of their label values.
func (v *HistogramVec) Collect(w *Writer) {
	keys, hs := sortedChildren(&v.mu, v.m)
	if len(hs) == 0 {
		return
	}
	w.Family(v.opts.Name, v.opts.Help, Histogram)
	for i, h := range hs {
		h.write(w, v.opts.Name, []string{v.label, keys[i]})
	}
}
