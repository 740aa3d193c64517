package ifstat

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// Config sets up a Tracker. Zero fields take the defaults; NewTracker
// rejects values outside the bounds given here, since they come from flags
// and config files.
type Config struct {
	Name     string        // interface name, for event texts
	Interval time.Duration // between reads: 100 ms (10 ms – 10 s)
	// Window is the span of the rate that labels a probe, ending at its
	// send time: 1 s (Interval – 60 s). A stale driver widens it to twice
	// its effective resolution.
	Window time.Duration
	// Hold keeps a loaded label this long after the rate falls below
	// High × capacity, while the buffer drains: 1 s (0 – 60 s). Set it to
	// the buffer's drain time when known.
	Hold time.Duration
	High float64 // a direction is saturated at ≥ High × capacity: 0.8
	Low  float64 // idle when both directions are below Low × capacity: 0.2 (0 < Low < High ≤ 1)
	// UpBps and DownBps are the configured capacities in bits/s (0: learn
	// them as the highest rate sustained for Sustain; ≤ 10 Tbit/s).
	UpBps, DownBps float64
	// MaxBps is the fastest the interface can count, bits/s (its link
	// speed): it bounds what a counter may add between reads, which tells a
	// 32-bit wrap from a reset. Default 10 Gbit/s (1 kbit/s – 10 Tbit/s).
	MaxBps       float64
	Keep         time.Duration // span of samples kept: 10 min (Window – 24 h, at most 1<<20 samples)
	Sustain      time.Duration // a learnt capacity is a rate held this long: 3 s (Interval – 60 s)
	MinLearntBps float64       // a learnt capacity below this is not used: 100 kbit/s
	// TxIsDown says the interface faces the LAN (a router's inside port),
	// so that its tx counter is the downlink; by default tx is the uplink.
	TxIsDown bool
	// OnEvent receives counter events (model.EventCounters); it is called
	// by the writer (Observe, Run) without the Tracker's lock held.
	OnEvent func(model.MonitorEvent)
}

const (
	maxRing      = 1 << 20
	maxCapBps    = 1e13
	eventQuietNs = int64(10 * time.Second) // at most one reset (or jump) event per this span
)

func (c *Config) setDefaults() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Interval, 100*time.Millisecond)
	def(&c.Window, time.Second)
	def(&c.Hold, time.Second)
	def(&c.Keep, 10*time.Minute)
	def(&c.Sustain, 3*time.Second)
	if c.High == 0 {
		c.High = 0.8
	}
	if c.Low == 0 {
		c.Low = 0.2
	}
	if c.MaxBps == 0 {
		c.MaxBps = 10e9
	}
	if c.MinLearntBps == 0 {
		c.MinLearntBps = 100e3
	}
	switch {
	case c.Interval < 10*time.Millisecond || c.Interval > 10*time.Second:
		return fmt.Errorf("ifstat: interval %v out of range (10ms–10s)", c.Interval)
	case c.Window < c.Interval || c.Window > time.Minute:
		return fmt.Errorf("ifstat: window %v out of range (%v–1m)", c.Window, c.Interval)
	case c.Hold < 0 || c.Hold > time.Minute:
		return fmt.Errorf("ifstat: hold %v out of range (0–1m)", c.Hold)
	case c.Sustain < c.Interval || c.Sustain > time.Minute:
		return fmt.Errorf("ifstat: sustain %v out of range (%v–1m)", c.Sustain, c.Interval)
	case c.Keep < c.Window+c.Sustain || c.Keep > 24*time.Hour || c.Keep/c.Interval > maxRing:
		return fmt.Errorf("ifstat: keep %v out of range (%v–24h, at most %d samples)", c.Keep, c.Window+c.Sustain, maxRing)
	case !(c.Low > 0 && c.Low < c.High && c.High <= 1):
		return fmt.Errorf("ifstat: thresholds low %g, high %g: need 0 < low < high ≤ 1", c.Low, c.High)
	case !(c.MaxBps >= 1e3 && c.MaxBps <= maxCapBps):
		return fmt.Errorf("ifstat: max rate %g bit/s out of range (1 kbit/s–10 Tbit/s)", c.MaxBps)
	case !(c.MinLearntBps > 0 && c.MinLearntBps <= maxCapBps):
		return fmt.Errorf("ifstat: minimum learnt capacity %g bit/s out of range", c.MinLearntBps)
	}
	for _, v := range []float64{c.UpBps, c.DownBps} {
		if !(v >= 0 && v <= maxCapBps) {
			return fmt.Errorf("ifstat: capacity %g bit/s out of range (0–10 Tbit/s)", v)
		}
	}
	return nil
}

// dir is one direction's view at a sample.
type dirState uint8

const (
	dirUnknown dirState = iota // no rate yet, or no capacity
	dirIdle
	dirMid // between Low and High: neither idle nor saturated
	dirSat // saturated, or within Hold of it
)

// entry is one sample in the ring.
type entry struct {
	t          int64
	rx, tx     uint64  // monotonic counts
	up, down   float64 // rates over the window ending at t, bits/s (valid only if ok)
	upSatNs    int64   // last time ≤ t the uplink was saturated in this segment (0: never)
	downSatNs  int64
	ok         bool
	state      model.LoadState
	us, ds     dirState // each direction's part of state
	resolution int64
}

// Tracker turns raw counter readings into monotonic samples and load
// states. One goroutine writes (Observe, or Run); any number read
// (Classify, Samples, Status) concurrently. Classify does not allocate.
type Tracker struct {
	cfg        Config
	intervalNs int64

	mu       sync.RWMutex
	ring     []entry
	head, n  int // next write index; entries held
	segStart int64
	rx, tx   counter
	stale    staleness
	capUp    float64 // configured (or set) capacities; 0: learn
	capDown  float64
	learntUp float64
	learntDn float64
	wraps    uint64
	resets   uint64
	jumps    uint64

	// Writer-only event bookkeeping.
	lastResetEv, lastJumpEv int64
	quietResets, quietJumps int
	events                  [4]model.MonitorEvent
	nev                     int
}

// NewTracker checks cfg and returns a Tracker.
func NewTracker(cfg Config) (*Tracker, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	iv := int64(cfg.Interval)
	return &Tracker{
		cfg:        cfg,
		intervalNs: iv,
		ring:       make([]entry, int(int64(cfg.Keep)/iv)+1),
		stale:      newStaleness(iv),
		capUp:      cfg.UpBps,
		capDown:    cfg.DownBps,
	}, nil
}

// SetCapacity replaces the capacities (bits/s; 0: learn) from now on, e.g.
// with the far side's receive rate, which a capacity learnt from the local
// tx counter overstates (docs/monitor.md).
func (t *Tracker) SetCapacity(upBps, downBps float64) error {
	for _, v := range []float64{upBps, downBps} {
		if !(v >= 0 && v <= maxCapBps) {
			return fmt.Errorf("ifstat: capacity %g bit/s out of range (0–10 Tbit/s)", v)
		}
	}
	t.mu.Lock()
	t.capUp, t.capDown = upBps, downBps
	t.mu.Unlock()
	return nil
}

func (t *Tracker) at(i int) *entry {
	j := t.head - t.n + i
	if j < 0 {
		j += len(t.ring)
	}
	return &t.ring[j]
}

// find returns the logical index of the newest entry with time ≤ ns, or -1.
func (t *Tracker) find(ns int64) int {
	lo, hi := 0, t.n // entries [0, lo) are ≤ ns; [hi, n) are > ns
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.at(m).t <= ns {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

func (t *Tracker) windowNs() int64 {
	w := int64(t.cfg.Window)
	if r := 2 * t.stale.resNs; r > w {
		w = r
	}
	return w
}

// Observe records one reading of the raw rx and tx byte counters taken at
// nowNs (Unix ns, the probes' clock). It is the only writer.
func (t *Tracker) Observe(nowNs int64, rawRx, rawTx uint64) model.CounterSample {
	t.mu.Lock()
	t.nev = 0
	if t.n > 0 {
		if dt := nowNs - t.at(t.n-1).t; dt <= 0 {
			// The clock went back: keep the ring sorted by starting over.
			// The time since the last reading is unknown: take one interval.
			t.n, t.segStart = 0, nowNs
			t.rx.changedNs, t.tx.changedNs = nowNs-t.intervalNs, nowNs-t.intervalNs
			t.stale.lastNs, t.stale.reads = nowNs-t.intervalNs, 0
		} else if dt > int64(t.cfg.Window) {
			// A gap in the readings longer than the window: no rate spans it.
			t.segStart = nowNs
		}
	} else {
		t.segStart = nowNs
	}
	oldRx, oldTx := t.rx.raw, t.tx.raw
	wasInit := t.rx.init
	dRx, chRx := t.rx.update(rawRx, nowNs, t.cfg.MaxBps)
	dTx, chTx := t.tx.update(rawTx, nowNs, t.cfg.MaxBps)
	t.noteChanges(nowNs, chRx, chTx, oldRx, rawRx, oldTx, rawTx)
	oldRes := t.stale.resNs
	if t.stale.observe(nowNs, wasInit && (rawRx != oldRx || rawTx != oldTx), dRx+dTx) {
		t.noteResolution(nowNs, oldRes)
	}

	e := entry{t: nowNs, rx: t.rx.total, tx: t.tx.total, resolution: t.stale.resNs}
	up, down := e.tx, e.rx
	if t.cfg.TxIsDown {
		up, down = down, up
	}
	var prev *entry
	if t.n > 0 {
		prev = t.at(t.n - 1)
	}
	if j := t.find(nowNs - t.windowNs()); j >= 0 {
		if o := t.at(j); o.t >= t.segStart {
			oUp, oDown := o.tx, o.rx
			if t.cfg.TxIsDown {
				oUp, oDown = oDown, oUp
			}
			span := float64(nowNs-o.t) / 1e9
			e.up, e.down, e.ok = float64(up-oUp)*8/span, float64(down-oDown)*8/span, true
		}
	}
	if e.ok {
		t.learn(&e)
	}
	capUp, capDown := t.capacities()
	us := t.direction(e.ok, e.up, capUp)
	ds := t.direction(e.ok, e.down, capDown)
	if prev != nil && prev.t >= t.segStart {
		e.upSatNs, e.downSatNs = prev.upSatNs, prev.downSatNs
	}
	hold := int64(t.cfg.Hold)
	if us == dirSat {
		e.upSatNs = nowNs
	} else if e.upSatNs != 0 && nowNs-e.upSatNs <= hold && us != dirUnknown {
		us = dirSat
	}
	if ds == dirSat {
		e.downSatNs = nowNs
	} else if e.downSatNs != 0 && nowNs-e.downSatNs <= hold && ds != dirUnknown {
		ds = dirSat
	}
	e.state, e.us, e.ds = combine(us, ds), us, ds

	t.ring[t.head] = e
	t.head = (t.head + 1) % len(t.ring)
	if t.n < len(t.ring) {
		t.n++
	}
	nev := t.nev
	evs := t.events
	t.mu.Unlock()
	t.deliver(evs[:nev])
	return model.CounterSample{TimeNs: nowNs, RxBytes: e.rx, TxBytes: e.tx}
}

func (t *Tracker) deliver(evs []model.MonitorEvent) {
	if t.cfg.OnEvent == nil {
		return
	}
	for _, ev := range evs {
		t.cfg.OnEvent(ev)
	}
}

// combine labels a sample from its two directions. A direction whose
// state is unknown leaves the label unknown unless the other one alone
// settles it (it is saturated); a direction between Low and High is
// neither idle nor saturated: with the other one idle or likewise, the
// link is loaded (model.LoadLoaded).
func combine(up, down dirState) model.LoadState {
	switch {
	case up == dirSat && down == dirSat:
		return model.LoadBoth
	case up == dirSat && (down == dirIdle || down == dirMid):
		return model.LoadUp
	case down == dirSat && (up == dirIdle || up == dirMid):
		return model.LoadDown
	case up == dirIdle && down == dirIdle:
		return model.LoadIdle
	case (up == dirIdle || up == dirMid) && (down == dirIdle || down == dirMid):
		return model.LoadLoaded
	}
	return model.LoadUnknown
}

// DirLoad is one direction's load at a reading: what the link's label is
// made of, for status pages and tests that check each direction.
type DirLoad uint8

const (
	DirUnknown   DirLoad = DirLoad(dirUnknown)
	DirIdle      DirLoad = DirLoad(dirIdle)
	DirLoaded    DirLoad = DirLoad(dirMid) // between Low and High × capacity
	DirSaturated DirLoad = DirLoad(dirSat) // ≥ High × capacity, or within Hold of it
)

func (d DirLoad) String() string {
	switch d {
	case DirIdle:
		return "idle"
	case DirLoaded:
		return "loaded"
	case DirSaturated:
		return "saturated"
	}
	return "unknown"
}

func (t *Tracker) direction(ok bool, rate, capacity float64) dirState {
	switch {
	case !ok || capacity <= 0:
		return dirUnknown
	case rate >= t.cfg.High*capacity:
		return dirSat
	case rate < t.cfg.Low*capacity:
		return dirIdle
	}
	return dirMid
}

// capacities returns the capacities in use: configured, else learnt once
// above MinLearntBps, else 0 (unknown).
func (t *Tracker) capacities() (up, down float64) {
	pick := func(set, learnt float64) float64 {
		if set > 0 {
			return set
		}
		if learnt >= t.cfg.MinLearntBps {
			return learnt
		}
		return 0
	}
	return pick(t.capUp, t.learntUp), pick(t.capDown, t.learntDn)
}

// learn raises the learnt capacities to the lowest windowed rate of the
// last Sustain, when every sample over it has a rate: the highest rate
// the link sustained that long.
func (t *Tracker) learn(e *entry) {
	from := e.t - int64(t.cfg.Sustain)
	minUp, minDown := e.up, e.down
	covered := false
	for i := t.n - 1; i >= 0; i-- {
		o := t.at(i)
		if !o.ok || o.t < t.segStart {
			return
		}
		minUp, minDown = math.Min(minUp, o.up), math.Min(minDown, o.down)
		if o.t <= from {
			covered = true
			break
		}
	}
	if !covered {
		return
	}
	t.learntUp = math.Max(t.learntUp, minUp)
	t.learntDn = math.Max(t.learntDn, minDown)
}

// Classify returns the load state at sentNs (a probe's send time, Unix
// ns): the label of the newest sample at or before it. It is unknown when
// no sample is that recent (the reader stopped or has not started) or the
// sample had no rate or capacity.
func (t *Tracker) Classify(sentNs int64) model.LoadState {
	t.mu.RLock()
	defer t.mu.RUnlock()
	j := t.find(sentNs)
	if j < 0 {
		return model.LoadUnknown
	}
	e := t.at(j)
	if sentNs-e.t > 2*t.intervalNs {
		return model.LoadUnknown
	}
	return e.state
}

// Samples appends to dst the samples newer than afterNs, oldest first.
func (t *Tracker) Samples(afterNs int64, dst []model.CounterSample) []model.CounterSample {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for i := t.find(afterNs) + 1; i < t.n; i++ {
		e := t.at(i)
		dst = append(dst, model.CounterSample{TimeNs: e.t, RxBytes: e.rx, TxBytes: e.tx})
	}
	return dst
}

// Status is the tracker's current view.
type Status struct {
	Samples int
	// Resolution is how often the counters really change under traffic:
	// Interval, or the stale driver's period (Stale).
	Resolution time.Duration
	Stale      bool
	Window     time.Duration // the rate window in use
	// UpBps, DownBps are the capacities in use (0: unknown); learnt says
	// which were learnt rather than configured.
	UpBps, DownBps       float64
	UpLearnt, DownLearnt bool
	UpRate, DownRate     float64 // newest windowed rates, bits/s, when RatesOK
	RatesOK              bool
	State                model.LoadState // newest sample's label
	Up, Down             DirLoad         // its two directions' parts
	Wraps, Resets, Jumps uint64
}

// Status returns the tracker's current view.
func (t *Tracker) Status() Status {
	t.mu.RLock()
	defer t.mu.RUnlock()
	up, down := t.capacities()
	s := Status{
		Samples:    t.n,
		Resolution: time.Duration(t.stale.resNs),
		Stale:      t.stale.resNs > t.intervalNs,
		Window:     time.Duration(t.windowNs()),
		UpBps:      up, DownBps: down,
		UpLearnt:   t.capUp == 0 && up > 0,
		DownLearnt: t.capDown == 0 && down > 0,
		Wraps:      t.wraps, Resets: t.resets, Jumps: t.jumps,
	}
	if t.n > 0 {
		e := t.at(t.n - 1)
		s.UpRate, s.DownRate, s.RatesOK, s.State = e.up, e.down, e.ok, e.state
		s.Up, s.Down = DirLoad(e.us), DirLoad(e.ds)
	}
	return s
}
