package monitor

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/metrictext"
	"github.com/sonde-project/sonde/internal/model"
)

// Every time the daemon keeps (probe send and receive times, the loop's
// clock, the scheduler's timerfd) derives from CLOCK_MONOTONIC (stamp's
// Clock: monotonic plus an epoch taken at start), so a step of the wall
// clock (settimeofday, an NTP or chrony step, a VM resumed) moves no
// probe: it fakes neither an outage nor a baseline step. It does make the
// stored times drift from the wall clock by the step until the next
// start, and it tells the user why timestamps from peers or the kernel
// may disagree at that moment. clockWatch notices it, once a loop pass,
// by comparing how far each clock moved since the last pass.

// clockStepMin is the smallest difference reported as a step, beyond the
// kernel's largest slew (500 ppm of the time between two checks): NTP
// daemons step from 128 ms (ntpd) or a configured threshold (chrony), and
// slew below.
const (
	clockStepMin  = 20 * time.Millisecond
	clockSlewRate = 500e-6
)

// ClockStatus is what /status shows of the wall clock.
type ClockStatus struct {
	Steps uint64 `json:"steps"` // since this start
	// LastStepS is the newest step's size (s; positive: the wall clock
	// jumped ahead), LastStepNs when it was noticed (the daemon's
	// monotonic-derived clock); 0 without a step.
	LastStepS  float64 `json:"last_step_s"`
	LastStepNs int64   `json:"last_step_ns,omitempty"`
}

// clockWatch compares the wall clock's progress with the monotonic
// clock's. read returns both, taken at the same instant (time.Now carries
// both readings; a test injects its own).
type clockWatch struct {
	read func() (wallNs, monoNs int64)

	started          bool
	lastWall, lastMo int64

	mu     sync.Mutex
	status ClockStatus

	reg   *metrictext.Registry
	steps *metrictext.ScalarMetric
	last  *metrictext.ScalarMetric
}

func newClockWatch(read func() (wallNs, monoNs int64)) *clockWatch {
	if read == nil {
		base := time.Now()
		read = func() (int64, int64) {
			t := time.Now()
			return t.UnixNano(), int64(t.Sub(base)) // t.Sub uses the monotonic readings
		}
	}
	w := &clockWatch{read: read, reg: metrictext.NewRegistry(),
		steps: metrictext.NewCounter(metrictext.Opts{Name: "sonde_monitor_clock_steps_total",
			Help: "Steps of the wall clock against the monotonic clock seen since the start (probe times are monotonic and unaffected)."}),
		last: metrictext.NewGauge(metrictext.Opts{Name: "sonde_monitor_clock_last_step_seconds",
			Help: "Size of the newest wall-clock step (positive: ahead); 0 without one."}),
	}
	w.reg.MustRegister(w.steps, w.last)
	return w
}

// check reads both clocks; on a step it returns the event to store
// (at: the daemon's clock now).
func (w *clockWatch) check(at int64) (model.MonitorEvent, bool) {
	wall, mono := w.read()
	if !w.started {
		w.started, w.lastWall, w.lastMo = true, wall, mono
		return model.MonitorEvent{}, false
	}
	dMono := mono - w.lastMo
	step := (wall - w.lastWall) - dMono
	w.lastWall, w.lastMo = wall, mono
	if math.Abs(float64(step)) <= float64(clockStepMin)+clockSlewRate*float64(max(dMono, 0)) {
		return model.MonitorEvent{}, false
	}
	s := float64(step) / 1e9
	w.steps.Inc()
	w.last.Set(s)
	w.mu.Lock()
	w.status.Steps++
	w.status.LastStepS, w.status.LastStepNs = s, at
	w.mu.Unlock()
	return model.MonitorEvent{Kind: model.EventClock, StartNs: at, EndNs: at, Stream: -1,
		Text:   fmt.Sprintf("clock step of %+.3f s: the wall clock was set; probe times are monotonic and unaffected, stored times now differ from the wall clock by it", s),
		Detail: map[string]float64{"step_s": s}}, true
}

func (w *clockWatch) view() ClockStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status
}
