package tcprun

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// The tests this package runs, by RFC 8337 section.
const (
	// TestPaced is 8.1.1, delivery statistics at paced full data rate.
	TestPaced = "8.1.1"
	// TestWindowed is 8.1.2, delivery statistics at full data windowed
	// rate: unpaced, at most W packets in flight, bounded by the
	// receiver's buffer (a TCP MBM session, WindowedStreams).
	TestWindowed = "8.1.2"
	// TestBurst is 8.5.1, sustained full-rate bursts.
	TestBurst = "8.5.1"
	// TestSenderBurst is 8.4, sender rate bursts: bursts of the size a
	// sender's TSO/GSO emits at its interface rate (Config.SenderBurst),
	// spaced for the target's mean rate.
	TestSenderBurst = "8.4"
)

// Tests lists the tests in the order Run runs them.
var Tests = []string{TestPaced, TestWindowed, TestSenderBurst, TestBurst}

// testName says each test in words.
var testName = map[string]string{
	TestPaced:       "paced full data rate",
	TestWindowed:    "full data windowed rate",
	TestBurst:       "sustained full-rate bursts",
	TestSenderBurst: "sender rate bursts",
}

// Defaults and bounds of Config.
const (
	DefaultPrecondition      = 0.9
	DefaultCongestionControl = "cubic"
	DefaultDerate            = 1.0
	MinDerate                = 0.05
	MaxSampleInterval        = 10 * time.Millisecond
	MinSampleInterval        = time.Millisecond
	// MaxPacingBps is the most SO_MAX_PACING_RATE takes as a 32-bit
	// value in bytes/s.
	MaxPacingBps = float64(math.MaxUint32-1) * 8
	// MinHeadway is the shortest burst headway the host's timers keep.
	MinHeadway = 2 * time.Millisecond
	maxPeriod  = time.Hour
)

// Config is one run of the TCP tests.
type Config struct {
	// Streams opens the upload streams the tests send on (a *Session);
	// 8.1.2 needs it to open windowed streams too (WindowedStreams).
	Streams Streams
	// Plan is the target and the SPRT setting (mbm.NewPlan).
	Plan mbm.Plan
	// Tests to run (TestPaced, TestWindowed, TestSenderBurst, TestBurst);
	// nil: all, in Tests' order.
	Tests []string
	// Derate scales 8.5.1's bursts and headways (RFC 8337 §8.5.1):
	// W·Derate packets every RTT·Derate; 0: DefaultDerate.
	Derate float64
	// SenderBurst is 8.4's burst in target packets (0: one 64 KiB
	// TSO/GSO segment's worth, 64 KiB / (MTU − header overhead) rounded
	// up: what Linux hands the interface at once).
	SenderBurst int64
	// CongestionControl is set on each test's socket ("": cubic; "-":
	// the system's). The default is not BBR, whose own pacing gains
	// would move a paced flow off its rate and smooth 8.5.1's bursts.
	CongestionControl string
	// Precondition is the fraction of the target rate the path must
	// sustain over RateWindow (0: DefaultPrecondition).
	Precondition float64
	// RateWindow is the precondition's sliding window (0: 1 s, at least
	// 4 target RTTs).
	RateWindow time.Duration
	// MinGrowth and MaxGrowth bound the growth period, in which nothing
	// is counted: it ends at the first sample after MinGrowth whose
	// window rate meets the precondition; at MaxGrowth without it the
	// test stops (FAIL or ERROR, with the reason). 0: defaults (1 s, and
	// the larger of 5 s, MinGrowth + 2 windows and 100 RTTs).
	MinGrowth, MaxGrowth time.Duration
	// MaxTest bounds the test period; at it an undecided test is
	// INCONCLUSIVE (0: the time MaxPackets take at the target rate,
	// × 1.5 + 2 s, at most 5 min).
	MaxTest time.Duration
	// SampleInterval is the TCP_INFO sampling interval (0: 10 ms, and
	// at most half the target RTT and of the measured min RTT).
	SampleInterval time.Duration
	// Sysctl reads a sysctl (dotted name) where the sender's sockets
	// live; nil reads /proc/sys in this process's network namespace.
	Sysctl func(key string) (string, error)
	// Logger receives one line per notable event (nil: none).
	Logger *slog.Logger
}

// withDefaults fills the defaults and bounds every field.
func (c Config) withDefaults() (Config, error) {
	if c.Streams == nil {
		return c, errors.New("tcprun: no stream opener (Config.Streams)")
	}
	if c.Plan.W <= 0 || c.Plan.MaxPackets <= 0 {
		return c, errors.New("tcprun: no plan (Config.Plan from mbm.NewPlan)")
	}
	t := c.Plan.Target
	if err := t.Validate(); err != nil {
		return c, err
	}
	if t.RateBps > MaxPacingBps/1.01 {
		return c, fmt.Errorf("target rate %.4g bit/s: above %.4g bit/s, the most SO_MAX_PACING_RATE paces", t.RateBps, MaxPacingBps/1.01)
	}
	if len(c.Tests) == 0 {
		c.Tests = Tests
	}
	for _, id := range c.Tests {
		if !slices.Contains(Tests, id) {
			return c, fmt.Errorf("test %q: the TCP tests are %s (the others are UDP tests)", id, strings.Join(Tests, ", "))
		}
	}
	if c.Derate == 0 {
		c.Derate = DefaultDerate
	}
	if !(c.Derate >= MinDerate && c.Derate <= 1) {
		return c, fmt.Errorf("derate %g: want %g to 1", c.Derate, MinDerate)
	}
	if c.SenderBurst == 0 {
		c.SenderBurst = (64<<10 + int64(t.MTU-t.HeaderOverhead) - 1) / int64(t.MTU-t.HeaderOverhead)
	}
	if c.SenderBurst < 1 || c.SenderBurst*int64(t.MTU-t.HeaderOverhead) > 4<<20 {
		return c, fmt.Errorf("sender burst %d packets: want 1 to 4 MiB of payload", c.SenderBurst)
	}
	if c.CongestionControl == "" {
		c.CongestionControl = DefaultCongestionControl
	}
	if c.CongestionControl == "-" {
		c.CongestionControl = ""
	}
	if len(c.CongestionControl) > 15 { // TCP_CA_NAME_MAX - 1
		return c, fmt.Errorf("congestion control %q: names are at most 15 bytes", c.CongestionControl)
	}
	if c.Precondition == 0 {
		c.Precondition = DefaultPrecondition
	}
	if !(c.Precondition > 0 && c.Precondition <= 1) {
		return c, fmt.Errorf("precondition %g: want a fraction of the target rate above 0 and at most 1", c.Precondition)
	}
	rtt := t.RTT
	if c.RateWindow == 0 {
		c.RateWindow = max(time.Second, 4*rtt)
	}
	if c.MinGrowth == 0 {
		c.MinGrowth = time.Second
	}
	if c.MaxGrowth == 0 {
		c.MaxGrowth = max(5*time.Second, c.MinGrowth+2*c.RateWindow, 100*rtt)
	}
	if c.MaxTest == 0 {
		c.MaxTest = min(5*time.Minute, time.Duration(1.5*float64(t.Duration(float64(c.Plan.MaxPackets))))+2*time.Second)
	}
	if c.SampleInterval == 0 {
		c.SampleInterval = min(MaxSampleInterval, rtt/2)
	}
	switch {
	case c.RateWindow < 10*time.Millisecond || c.RateWindow > time.Minute:
		return c, fmt.Errorf("rate window %s: want 10ms to 1m", c.RateWindow)
	case c.MinGrowth < 0 || c.MinGrowth > c.MaxGrowth || c.MaxGrowth > maxPeriod:
		return c, fmt.Errorf("growth period %s to %s: want 0 ≤ min ≤ max ≤ %s", c.MinGrowth, c.MaxGrowth, maxPeriod)
	case c.MaxTest <= 0 || c.MaxTest > maxPeriod:
		return c, fmt.Errorf("test period %s: want more than 0 and at most %s", c.MaxTest, maxPeriod)
	case c.SampleInterval < MinSampleInterval || c.SampleInterval > MaxSampleInterval:
		return c, fmt.Errorf("sampling interval %s: want %s to %s (and at most RTT/2)", c.SampleInterval, MinSampleInterval, MaxSampleInterval)
	}
	c.SampleInterval = max(MinSampleInterval, min(c.SampleInterval, rtt/2))
	if c.Sysctl == nil {
		c.Sysctl = readSysctl
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// readSysctl reads /proc/sys/KEY (dots for slashes), in the network
// namespace of the calling thread.
func readSysctl(key string) (string, error) {
	if strings.Contains(key, "..") || strings.ContainsRune(key, '/') {
		return "", fmt.Errorf("sysctl %q: not a sysctl name", key)
	}
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", key, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// FillEnv records the sending host's kernel and the congestion control
// the tests ask for (or the system's, for "-") in env.
func FillEnv(env *model.MBMEnv, c Config) {
	env.Kernel = tcpinfo.KernelRelease()
	switch c.CongestionControl {
	case "":
		env.CongestionControl = DefaultCongestionControl
	case "-":
		if s, err := readSysctl("net.ipv4.tcp_congestion_control"); err == nil {
			env.CongestionControl = s
		}
	default:
		env.CongestionControl = c.CongestionControl
	}
}
