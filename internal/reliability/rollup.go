package reliability

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// MinuteNs is a rollup's span.
const MinuteNs = int64(60e9)

// MaxStreams bounds the stream index a sample or rollup may carry: the
// per-stream state is allocated up to it, so a corrupt index cannot make a
// report allocate without limit.
const MaxStreams = 1024

// minuteOf is the start of the minute holding t (floor, also before 1970).
func minuteOf(t int64) int64 { return units.FloorTo(t, MinuteNs) }

// Roller builds per-minute rollups from raw samples given in send order
// per stream. A probe belongs to the minute of its send time; Lost and Late
// are taken from the sample as stored, so the caller must roll a minute up
// only when its last probe's timeout has passed (else a reply still on its
// way would be counted lost).
type Roller struct {
	thresholds []int64
	emit       func(model.MonitorRollup)
	open       []*minuteAcc // by stream; nil: none open
}

type minuteAcc struct {
	minute           int64
	sent, lost, late uint32
	rtt              []uint32
	fwd, rev         []uint32 // nil until a one-way delay is seen
	sum, sumSq       float64
	min, max         int64
	answered         uint32
	within           []uint32
	load             [len(model.LoadStates)]loadAcc
}

type loadAcc struct {
	sent, lost uint32
	within     []uint32
}

// NewRoller returns a Roller counting exactly, per minute, the probes
// within each threshold (ns, ascending) and calling emit for every closed
// minute. The thresholds are copied.
func NewRoller(thresholdsNs []int64, emit func(model.MonitorRollup)) *Roller {
	return &Roller{thresholds: append([]int64(nil), thresholdsNs...), emit: emit}
}

// Add counts one sample. A sample older than its stream's open minute, or
// with a stream index outside [0, MaxStreams), is an error.
func (r *Roller) Add(s model.ProbeSample) error {
	if s.Stream < 0 || s.Stream >= MaxStreams {
		return fmt.Errorf("rollup: stream index %d out of range [0, %d)", s.Stream, MaxStreams)
	}
	for int(s.Stream) >= len(r.open) {
		r.open = append(r.open, nil)
	}
	m := minuteOf(s.SentNs)
	a := r.open[s.Stream]
	if a != nil && m < a.minute {
		return fmt.Errorf("rollup: stream %d: sample sent at %d ns is older than minute %d already open: samples must be in send order", s.Stream, s.SentNs, a.minute)
	}
	if a != nil && m != a.minute {
		r.close(s.Stream)
	}
	if a == nil {
		a = &minuteAcc{rtt: make([]uint32, NumBins), within: make([]uint32, len(r.thresholds))}
		r.open[s.Stream] = a
	}
	if a.sent == 0 {
		a.minute = m
	}
	a.add(s, r.thresholds)
	return nil
}

func (a *minuteAcc) add(s model.ProbeSample, th []int64) {
	a.sent++
	li := loadIndex(s.Load)
	la := &a.load[li]
	la.sent++
	if failed(s) {
		a.lost++
		la.lost++
		if s.Late {
			a.late++
		}
		return
	}
	rtt := s.RTTNs
	a.rtt[BinOf(rtt)]++
	if a.answered == 0 || rtt < a.min {
		a.min = rtt
	}
	if a.answered == 0 || rtt > a.max {
		a.max = rtt
	}
	a.answered++
	a.sum += float64(rtt)
	a.sumSq += float64(rtt) * float64(rtt)
	if la.within == nil {
		la.within = make([]uint32, len(th))
	}
	for i, l := range th {
		if rtt <= l {
			a.within[i]++
			la.within[i]++
		}
	}
	if s.FwdNs > 0 || s.RevNs > 0 {
		if a.fwd == nil {
			a.fwd, a.rev = make([]uint32, NumBins), make([]uint32, NumBins)
		}
		a.fwd[BinOf(s.FwdNs)]++
		a.rev[BinOf(s.RevNs)]++
	}
}

// failed tells whether a sample counts as a failure for every threshold:
// lost, answered late, or carrying no usable RTT.
func failed(s model.ProbeSample) bool {
	return s.Lost || s.Late || s.RTTNs < 0
}

func loadIndex(l model.LoadState) int {
	if int(l) >= len(model.LoadStates) {
		return int(model.LoadUnknown)
	}
	return int(l)
}

// Flush closes every open minute.
func (r *Roller) Flush() {
	for i := range r.open {
		if r.open[i] != nil && r.open[i].sent > 0 {
			r.close(int32(i))
		}
	}
}

func (r *Roller) close(stream int32) {
	a := r.open[stream]
	ro := model.MonitorRollup{
		Stream: stream, MinuteNs: a.minute, Sent: a.sent, Lost: a.lost, Late: a.late,
		SumNs: a.sum, SumSqNs: a.sumSq, MinNs: a.min, MaxNs: a.max,
		Bins: sparse(a.rtt), ThresholdsNs: r.thresholds,
		Within: append([]uint32(nil), a.within...),
	}
	if a.fwd != nil {
		ro.FwdBins, ro.RevBins = sparse(a.fwd), sparse(a.rev)
	}
	for _, st := range model.LoadStates {
		la := &a.load[st]
		if la.sent == 0 {
			continue
		}
		w := make([]uint32, len(r.thresholds))
		copy(w, la.within)
		ro.ByLoad = append(ro.ByLoad, model.RollupLoad{Load: st, Sent: la.sent, Lost: la.lost, Within: w})
	}
	r.emit(ro)
	// Reuse the buffers: clearing is cheaper than a new 4 KB histogram.
	clear(a.rtt)
	clear(a.within)
	if a.fwd != nil {
		clear(a.fwd)
		clear(a.rev)
	}
	for i := range a.load {
		a.load[i].sent, a.load[i].lost = 0, 0
		clear(a.load[i].within)
	}
	a.sent, a.lost, a.late, a.answered = 0, 0, 0, 0
	a.sum, a.sumSq, a.min, a.max = 0, 0, 0, 0
}

func sparse(d []uint32) []model.RollupBin {
	var out []model.RollupBin
	for b, n := range d {
		if n > 0 {
			out = append(out, model.RollupBin{Bin: uint16(b), N: n})
		}
	}
	return out
}
