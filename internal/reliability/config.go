package reliability

import (
	"fmt"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
)

// Config sets what a report computes. Zero fields take the defaults
// (Defaults()); Validate bounds what a flag or file may ask for.
type Config struct {
	// ThresholdsNs are the latencies L of R(L); default 50, 100, 200,
	// 500 ms, 1 s, 5 s. The profiles' latencies are added.
	ThresholdsNs []int64
	// WindowsNs are the sliding window lengths, whole minutes; default 1 min,
	// 10 min, 1 h. Windows advance by one minute.
	WindowsNs []int64
	// MinWindowProbes: a window with fewer probes sent is not judged (a
	// window spanning a daemon restart holds a few probes only).
	MinWindowProbes uint64
	// Profiles to judge; nil: the smart-grid table (SmartGrid).
	Profiles []model.RequirementProfile
	// ProbeIntervalNs is the probers' interval (default 100 ms): outage
	// durations are within one of it, and baseline steps that are a
	// multiple of it are probable artefacts.
	ProbeIntervalNs int64
	// ExactLimit is how many raw values per stream are kept for exact
	// percentiles (default 4 Mi, 32 MB); beyond it percentiles come from
	// the histogram (within 1 %) and the report says so.
	ExactLimit int

	Outage OutageConfig
	Step   StepConfig
	Loaded LoadedConfig
}

// OutageConfig: an outage is at least MinProbes consecutive failed probes
// of a stream spanning at least MinNs (default 3 probes and 1 s).
type OutageConfig struct {
	MinProbes int
	MinNs     int64
}

// StepConfig: a baseline step is a shift of the per-minute p5 RTT by at
// least max(MinNs, Rel × level) that holds for PersistMinutes minutes
// after it, with PersistMinutes steady minutes before it (defaults 5 ms,
// 0.1, 5). Minutes with fewer than MinAnswered answers (default 10), with
// ≥ 10 % loss, or just after such a minute are not used: the values around
// an outage are transients, not a level.
type StepConfig struct {
	PersistMinutes int
	MinNs          int64
	Rel            float64
	MinAnswered    uint32
	// ArtefactTolNs: a step within this of a multiple of the probe
	// interval is flagged "probable-artefact" (default max(2 ms, 5 % of the
	// interval)).
	ArtefactTolNs int64
}

// LoadedConfig sets the loaded-episode detector and its figures.
type LoadedConfig struct {
	// UpBps, DownBps are the access link's capacities (bit/s) for the
	// inferred buffer and BDP; 0: not computed.
	UpBps, DownBps float64
	// Capacities, when given, are the capacities over time (a monitor's
	// recorded history, oldest first, each span until the next): an
	// episode takes the span holding its start; UpBps/DownBps hold before
	// the first. At most MaxCapacitySpans.
	Capacities []CapacitySpan
	// MinNs: shorter episodes are ignored (default 5 s); GapNs: loaded runs
	// closer than this are one episode (default 1 s).
	MinNs, GapNs int64
	// ElevatedNs: on a stream without load labels, probes this far above
	// the baseline so far (the lowest per-minute p5) make an episode
	// (default 30 ms, cake-autorate's bufferbloat threshold).
	ElevatedNs int64
	// FQMaxNs, AQMMaxNs: added p95 delay under which an episode's queue is
	// classed FQ (default 10 ms) or AQM (default 50 ms).
	FQMaxNs, AQMMaxNs int64
	// MTUBytes is the size of the load's packets (default 1500): with the
	// capacity known, the FQ bound grows by one MTU's serialisation time
	// and the AQM bound by two (see episodeEvent).
	MTUBytes int
	// MaxSamples bounds the probes kept per stream for episode figures
	// (default 2 Mi); later episodes are listed without figures.
	MaxSamples int
}

// CapacitySpan is the access link's capacities (bit/s; 0: unknown) from
// FromNs (Unix ns) until the next span.
type CapacitySpan struct {
	FromNs         int64
	UpBps, DownBps float64
}

// MaxCapacitySpans bounds LoadedConfig.Capacities.
const MaxCapacitySpans = 100_000

const (
	ms  = int64(1e6)
	sec = int64(1e9)
	// maxLatencyNs is the largest threshold or profile latency: the
	// histogram's top.
	maxLatencyNs = 1000 * sec
	maxWindowNs  = 7 * 24 * 3600 * sec
)

// Defaults returns the documented defaults.
func Defaults() Config {
	var c Config
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.ThresholdsNs == nil {
		c.ThresholdsNs = []int64{50 * ms, 100 * ms, 200 * ms, 500 * ms, sec, 5 * sec}
	}
	if c.WindowsNs == nil {
		c.WindowsNs = []int64{MinuteNs, 10 * MinuteNs, 60 * MinuteNs}
	}
	if c.MinWindowProbes == 0 {
		c.MinWindowProbes = 10
	}
	if c.Profiles == nil {
		c.Profiles = SmartGrid()
	}
	if c.ProbeIntervalNs == 0 {
		c.ProbeIntervalNs = 100 * ms
	}
	if c.ExactLimit == 0 {
		c.ExactLimit = 4 << 20
	}
	o := &c.Outage
	if o.MinProbes == 0 {
		o.MinProbes = 3
	}
	if o.MinNs == 0 {
		o.MinNs = sec
	}
	s := &c.Step
	if s.PersistMinutes == 0 {
		s.PersistMinutes = 5
	}
	if s.MinNs == 0 {
		s.MinNs = 5 * ms
	}
	if s.Rel == 0 {
		s.Rel = 0.1
	}
	if s.MinAnswered == 0 {
		s.MinAnswered = 10
	}
	if s.ArtefactTolNs == 0 {
		s.ArtefactTolNs = max(2*ms, c.ProbeIntervalNs/20)
	}
	l := &c.Loaded
	if l.MinNs == 0 {
		l.MinNs = 5 * sec
	}
	if l.GapNs == 0 {
		l.GapNs = sec
	}
	if l.ElevatedNs == 0 {
		l.ElevatedNs = 30 * ms
	}
	if l.FQMaxNs == 0 {
		l.FQMaxNs = 10 * ms
	}
	if l.AQMMaxNs == 0 {
		l.AQMMaxNs = 50 * ms
	}
	if l.MaxSamples == 0 {
		l.MaxSamples = 2 << 20
	}
	if l.MTUBytes == 0 {
		l.MTUBytes = 1500
	}
}

// Validate checks a filled configuration's bounds.
func (c *Config) Validate() error {
	if len(c.ThresholdsNs) == 0 || len(c.ThresholdsNs) > 32 {
		return fmt.Errorf("reliability: %d thresholds: want 1 to 32", len(c.ThresholdsNs))
	}
	for _, l := range c.ThresholdsNs {
		if l <= 0 || l > maxLatencyNs {
			return fmt.Errorf("reliability: threshold %d ns out of range (0, 1000 s]", l)
		}
	}
	if len(c.WindowsNs) > 8 {
		return fmt.Errorf("reliability: %d window lengths: want at most 8", len(c.WindowsNs))
	}
	for _, w := range c.WindowsNs {
		if w <= 0 || w%MinuteNs != 0 || w > maxWindowNs {
			return fmt.Errorf("reliability: window %d ns: want whole minutes up to 7 days", w)
		}
	}
	if len(c.Profiles) > maxProfiles {
		return fmt.Errorf("reliability: %d profiles: want at most %d", len(c.Profiles), maxProfiles)
	}
	for _, p := range c.Profiles {
		if err := checkProfile(p); err != nil {
			return err
		}
	}
	if c.ProbeIntervalNs < ms || c.ProbeIntervalNs > 60*sec {
		return fmt.Errorf("reliability: probe interval %d ns out of range [1 ms, 60 s]", c.ProbeIntervalNs)
	}
	if c.ExactLimit < 0 || c.ExactLimit > 64<<20 {
		return fmt.Errorf("reliability: exact limit %d out of range [0, 64 Mi]", c.ExactLimit)
	}
	if c.Outage.MinProbes < 1 || c.Outage.MinNs < 0 {
		return fmt.Errorf("reliability: outage minimum of %d probes, %d ns: want ≥ 1 probe, ≥ 0 ns", c.Outage.MinProbes, c.Outage.MinNs)
	}
	if c.Step.PersistMinutes < 1 || c.Step.PersistMinutes > 1440 || c.Step.Rel < 0 || c.Step.MinNs < 0 {
		return fmt.Errorf("reliability: step persistence %d min (want 1 to 1440), relative %g, minimum %d ns", c.Step.PersistMinutes, c.Step.Rel, c.Step.MinNs)
	}
	l := c.Loaded
	if l.UpBps < 0 || l.DownBps < 0 || l.UpBps > 1e13 || l.DownBps > 1e13 {
		return fmt.Errorf("reliability: capacities %g, %g bit/s out of range [0, 10 Tbit/s]", l.UpBps, l.DownBps)
	}
	if len(l.Capacities) > MaxCapacitySpans {
		return fmt.Errorf("reliability: %d capacity spans, at most %d", len(l.Capacities), MaxCapacitySpans)
	}
	for i, c := range l.Capacities {
		if !(c.UpBps >= 0 && c.DownBps >= 0 && c.UpBps <= 1e13 && c.DownBps <= 1e13) || (i > 0 && c.FromNs < l.Capacities[i-1].FromNs) {
			return fmt.Errorf("reliability: capacity span %d (from %d ns: %g, %g bit/s): want capacities in [0, 10 Tbit/s], oldest first", i, c.FromNs, c.UpBps, c.DownBps)
		}
	}
	if l.MTUBytes < 68 || l.MTUBytes > 65535 {
		return fmt.Errorf("reliability: MTU %d bytes out of range [68, 65535]", l.MTUBytes)
	}
	if l.MaxSamples < 0 || l.MaxSamples > 64<<20 {
		return fmt.Errorf("reliability: episode sample limit %d out of range [0, 64 Mi]", l.MaxSamples)
	}
	return nil
}

// thresholds is the sorted union of the configured thresholds and the
// profiles' latencies: each is counted exactly from raw samples.
func (c *Config) thresholds() []int64 {
	th := slices.Clone(c.ThresholdsNs)
	for _, p := range c.Profiles {
		th = append(th, p.LatencyNs)
	}
	slices.Sort(th)
	return slices.Compact(th)
}
