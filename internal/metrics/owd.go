package metrics

import (
	"math"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// One-way delay and clock offset (metrics.md §3).

// Probe holds the four timestamps of one two-way probe, in seconds: T1 the
// client's send and T4 its receive time (client clock), T2 the reflector's
// receive and T3 its send time (reflector clock).
type Probe struct {
	T1, T2, T3, T4 float64
}

// RTT is (t4 − t1) − (t3 − t2): the round trip without the reflector's
// turnaround time.
func (p Probe) RTT() float64 { return (p.T4 - p.T1) - (p.T3 - p.T2) }

// Theta is the offset sample ((t2 − t1) + (t3 − t4)) / 2: the reflector
// clock minus the client clock, exact when both directions take equally
// long and off by half the asymmetry otherwise.
func (p Probe) Theta() float64 { return ((p.T2 - p.T1) + (p.T3 - p.T4)) / 2 }

// Offset is a linear model of the reflector clock minus the client clock:
// θ(t) = At + Drift·(t − T0), t on the client clock, in seconds.
type Offset struct {
	T0, At, Drift float64
	// Uncertainty bounds |θ − true offset| (s): half the smallest RTT (the
	// split of a round trip between directions is unknowable from two-way
	// probes) plus the scatter of the window estimates around the line.
	Uncertainty float64
	Samples     int
}

// Eval returns the modelled offset at client time t.
func (o Offset) Eval(t float64) float64 { return o.At + o.Drift*(t-o.T0) }

// Forward returns the forward one-way delay t2 − t1 − θ(t1).
func (o Offset) Forward(p Probe) float64 { return p.T2 - p.T1 - o.Eval(p.T1) }

// Backward returns the backward one-way delay t4 − t3 + θ(t1).
func (o Offset) Backward(p Probe) float64 { return p.T4 - p.T3 + o.Eval(p.T1) }

// Model returns the offset in the result schema's units.
func (o Offset) Model() model.ClockOffset {
	return model.ClockOffset{
		OffsetMs: o.At * 1e3, DriftPPM: o.Drift * 1e6,
		UncertaintyMs: o.Uncertainty * 1e3, Samples: o.Samples,
	}
}

// EstimateOffset fits the offset of the reflector's clock from probes
// (sorted by T1 or not; invalid ones, with a non-finite time or a negative
// RTT, are skipped). The run is cut into windows of window seconds; in
// each, the median θ of the lowest-RTT tenth of the probes (at least one)
// estimates the offset at the window's median send time, because the
// fastest probes met the least queueing and so the least asymmetry. A
// least-squares line through the window estimates tracks linear drift; with
// one window the drift is 0. ok is false when no probe is usable.
func EstimateOffset(probes []Probe, window float64) (o Offset, ok bool) {
	ps := make([]Probe, 0, len(probes))
	for _, p := range probes {
		if isFiniteNum(p.T1) && isFiniteNum(p.T2) && isFiniteNum(p.T3) && isFiniteNum(p.T4) && p.RTT() >= 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return Offset{}, false
	}
	slices.SortFunc(ps, func(a, b Probe) int { return cmpFloat(a.T1, b.T1) })
	if !(window > 0) {
		window = math.Inf(1)
	}
	var ts, thetas []float64
	minRTT := math.Inf(1)
	used := 0
	for start := 0; start < len(ps); {
		end := start
		for end < len(ps) && ps[end].T1-ps[start].T1 < window {
			end++
		}
		w := slices.Clone(ps[start:end])
		slices.SortFunc(w, func(a, b Probe) int { return cmpFloat(a.RTT(), b.RTT()) })
		k := max(1, len(w)/10)
		minRTT = math.Min(minRTT, w[0].RTT())
		var th, t1 []float64
		for _, p := range w[:k] {
			th = append(th, p.Theta())
			t1 = append(t1, p.T1)
		}
		slices.Sort(th)
		slices.Sort(t1)
		thetas = append(thetas, Percentile(th, 50))
		ts = append(ts, Percentile(t1, 50))
		used += k
		start = end
	}
	o = Offset{T0: ps[0].T1, Samples: used}
	o.At, o.Drift = fitLine(ts, thetas, o.T0)
	var scatter float64
	for i := range ts {
		scatter = math.Max(scatter, math.Abs(thetas[i]-o.Eval(ts[i])))
	}
	o.Uncertainty = minRTT/2 + scatter
	return o, true
}

// fitLine returns the least-squares line y = a + b(x − x0); one point or
// no spread in x gives the mean and b = 0.
func fitLine(xs, ys []float64, x0 float64) (a, b float64) {
	n := float64(len(xs))
	var mx, my float64
	for i := range xs {
		mx += xs[i] - x0
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxy, sxx float64
	for i := range xs {
		dx := xs[i] - x0 - mx
		sxy += dx * (ys[i] - my)
		sxx += dx * dx
	}
	if sxx == 0 {
		return my, 0
	}
	b = sxy / sxx
	return my - b*mx, b
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
