package monitor

import (
	"math"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
)

// window is the detectors' window: the last recentSpan of probes in the
// order the loop drained them, as a ring allocated once at the daemon's
// start (windowCap) and never grown, each probe packed in 14 bytes (send
// time 8, RTT 4, stream, flags and load state 2) in three parallel
// arrays. It holds exactly what a []winSample held (the detectors read the
// same samples: TestDetectorsSameOnWindowSamples); the packing and the
// fixed size are its memory: 72,000 probes at 8 × 10/s took 2.5 MB as
// 24-byte samples in an array grown by half, 1.1 MB here
// (docs/monitor.md, "Memory").
type window struct {
	sent []int64
	rtt  []uint32 // RTT in ns; rttNone: −1; rttBig: in big
	meta []uint16 // stream | lost<<8 | late<<9 | load<<10
	head int      // index of the oldest sample
	n    int
	// big holds the RTTs that do not fit 32 bits (a late reply after
	// 4.29 s, timeouts reach 60 s; any negative RTT but −1), by position
	// in the arrays; an entry goes when its slot is reused.
	big map[int]int64
}

const (
	rttNone = math.MaxUint32     // RTTNs −1: lost
	rttBig  = math.MaxUint32 - 1 // in window.big
	// winMaxStream and winMaxLoad are what meta can hold: a prober runs
	// at most probe.MaxStreams (32) streams, and there are six load states.
	winMaxStream = 1<<8 - 1
	winMaxLoad   = 1<<6 - 1
)

var _ = [1]int{}[probe.MaxStreams/(winMaxStream+1)] // probe.MaxStreams ≤ 255

func newWindow(capacity int) *window {
	capacity = max(capacity, 1)
	return &window{sent: make([]int64, capacity), rtt: make([]uint32, capacity), meta: make([]uint16, capacity)}
}

// windowCap is the window's size for a plan: the samples of recentSpan,
// plus what one pass may add before the trim (a minute of samples, the
// probe ring's size) and the lost samples that come a timeout late
// (4 × the timeout), at most maxRecent.
func windowCap(streams int, rate float64, timeout time.Duration) int {
	span := recentSpan + time.Minute + 4*timeout
	return min(maxRecent, int(math.Ceil(float64(streams)*rate*span.Seconds()))+1024)
}

// Len is the number of samples held.
func (w *window) Len() int { return w.n }

// Cap is the number of samples the window can hold.
func (w *window) Cap() int { return len(w.sent) }

func (w *window) pos(i int) int {
	p := w.head + i
	if p >= len(w.sent) {
		p -= len(w.sent)
	}
	return p
}

// SentNs is the send time of the i-th sample (0 the oldest).
func (w *window) SentNs(i int) int64 { return w.sent[w.pos(i)] }

// Stream is the stream of the i-th sample.
func (w *window) Stream(i int) int32 { return int32(w.meta[w.pos(i)] & winMaxStream) }

// At returns the i-th sample (0 the oldest).
func (w *window) At(i int) winSample {
	p := w.pos(i)
	m := w.meta[p]
	s := winSample{SentNs: w.sent[p], Stream: int32(m & winMaxStream), Lost: m&(1<<8) != 0, Late: m&(1<<9) != 0, Load: model.LoadState(m >> 10)}
	switch r := w.rtt[p]; r {
	case rttNone:
		s.RTTNs = -1
	case rttBig:
		s.RTTNs = w.big[p]
	default:
		s.RTTNs = int64(r)
	}
	return s
}

func (w *window) set(p int, s winSample) {
	delete(w.big, p)
	w.sent[p] = s.SentNs
	m := uint16(min(max(s.Stream, 0), winMaxStream)) | uint16(min(s.Load, winMaxLoad))<<10
	if s.Lost {
		m |= 1 << 8
	}
	if s.Late {
		m |= 1 << 9
	}
	w.meta[p] = m
	switch {
	case s.RTTNs == -1:
		w.rtt[p] = rttNone
	case s.RTTNs >= 0 && s.RTTNs < rttBig:
		w.rtt[p] = uint32(s.RTTNs)
	default:
		if w.big == nil {
			w.big = map[int]int64{}
		}
		w.rtt[p] = rttBig
		w.big[p] = s.RTTNs
	}
}

// Set replaces the i-th sample.
func (w *window) Set(i int, s winSample) { w.set(w.pos(i), s) }

// Push appends s as the newest sample; when the window is full, the
// oldest goes (maxRecent's bound, which trim applied before).
func (w *window) Push(s winSample) {
	if w.n == len(w.sent) {
		w.Drop(1)
	}
	w.set(w.pos(w.n), s)
	w.n++
}

// Drop removes the k oldest samples.
func (w *window) Drop(k int) {
	k = min(k, w.n)
	if len(w.big) > 0 {
		for i := range k {
			delete(w.big, w.pos(i))
		}
	}
	w.head = w.pos(k)
	w.n -= k
	if w.n == 0 {
		w.head = 0
	}
}
