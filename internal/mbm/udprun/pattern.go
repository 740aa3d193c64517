package udprun

import (
	"fmt"
	"math"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
)

// The tests this runner knows (RFC 8337 §8), in the order `--tests all`
// runs them.
const (
	TestPaced      = "8.1.1"
	TestWindowed   = "8.1.2"
	TestBackground = "8.1.3"
	// The standing queue scan (scan.go): one scan gives all four.
	TestScanCA     = "8.2.1"
	TestScanBloat  = "8.2.2"
	TestScanLoss   = "8.2.3"
	TestScanDuplex = "8.2.4"
	TestSlowstart  = "8.3.1"
	TestAQM        = "8.3.2"
	TestSenderBur  = "8.4"
	TestBursts     = "8.5.1"
)

// backgroundShare is 8.1.3's rate as a share of the target: low enough
// that the probes themselves do not congest the path (RFC 8337 §8.1.3:
// lightweight monitoring), high enough that the SPRT decides in ten
// times 8.1.1's time.
const backgroundShare = 0.1

// Tests lists the tests with their names.
var Tests = []struct{ ID, Name string }{
	{TestPaced, "paced full data rate"},
	{TestWindowed, "full data windowed rate"},
	{TestBackground, "background packet transfer statistics"},
	{TestScanCA, "standing queue: congestion avoidance"},
	{TestScanBloat, "standing queue: bufferbloat"},
	{TestScanLoss, "standing queue: non excessive loss"},
	{TestScanDuplex, "standing queue: duplex self-interference"},
	{TestSlowstart, "full window slowstart"},
	{TestAQM, "slowstart AQM"},
	{TestSenderBur, "sender rate bursts"},
	{TestBursts, "sustained full-rate bursts"},
}

// TestName names a test; ok is false for a test this runner does not have.
func TestName(id string) (string, bool) {
	for _, t := range Tests {
		if t.ID == id {
			return t.Name, true
		}
	}
	return "", false
}

// maxGap bounds a packet's time at the target rate: a slower target is
// no test of a path's capacity, and every duration below stays finite.
const maxGap = time.Second

// pattern is a test's send schedule: packets in bursts of Burst packets,
// each burst cut into sub-bursts of Sub packets sent back to back SubGap
// apart, bursts Headway apart. Every pattern's mean rate is the target's.
type pattern struct {
	ID, Name string
	Burst    int64
	Sub      int64
	SubGap   time.Duration
	Headway  time.Duration
	// Gap is one packet's time at the target rate.
	Gap time.Duration
	// Derate is 8.5.1's.
	Derate float64
	// Window (8.1.2; 0: none) bounds the packets in flight: sent and
	// neither reported arrived nor final.
	Window int64
	// Rate is the pattern's mean rate in bit/s of IP packets: the
	// target's, but for 8.1.3 (backgroundShare of it).
	Rate float64
}

// newPattern builds test id's pattern for plan; burst is 8.4's burst size.
func newPattern(id string, p mbm.Plan, derate float64, burst int64) (pattern, error) {
	name, ok := TestName(id)
	if !ok {
		return pattern{}, fmt.Errorf("test %q: this runner has %s", id, testIDs())
	}
	// One MTU-sized IP packet at the target rate.
	gapS := float64(p.MTU) * 8 / p.RateBps
	if !(gapS >= 1e-9 && gapS <= maxGap.Seconds()) {
		return pattern{}, fmt.Errorf("target rate %g bit/s: one %d-byte packet every %.3g s; the UDP mode sends one every 1 ns to %s", p.RateBps, p.MTU, gapS, maxGap)
	}
	if closedLoop(id) {
		return pattern{}, fmt.Errorf("test %s: a closed-loop test, not a pattern", id)
	}
	pt := pattern{ID: id, Name: name, Rate: p.RateBps}
	if id == TestBackground {
		gapS /= backgroundShare
		pt.Rate *= backgroundShare
		if gapS > maxGap.Seconds() {
			return pattern{}, fmt.Errorf("target rate %g bit/s: 8.1.3's probes at %g of it are one %d-byte packet every %.3g s; the UDP mode sends one every 1 ns to %s", p.RateBps, backgroundShare, p.MTU, gapS, maxGap)
		}
	}
	gap := time.Duration(gapS * 1e9)
	pt.Gap = gap
	switch id {
	case TestPaced, TestBackground: // constant rate at the target (8.1.3: a share of it)
		pt.Burst, pt.Sub = 1, 1
	case TestWindowed: // paced at the target, at most W packets in flight
		pt.Burst, pt.Sub, pt.Window = 1, 1, p.W
	case TestBursts: // W·derate packets every RTT·derate
		if !(derate > 0 && derate <= 1) {
			return pattern{}, fmt.Errorf("derate %g: want more than 0, at most 1", derate)
		}
		pt.Derate = derate
		pt.Burst = max(1, int64(math.Round(float64(p.W)*derate)))
		pt.Sub = pt.Burst
	case TestSenderBur: // bursts at the sender's line rate
		pt.Burst, pt.Sub = max(1, burst), max(1, burst)
	case TestSlowstart: // W per RTT in 4-packet sub-bursts at twice the rate
		pt.Burst, pt.Sub = p.W, min(4, p.W)
		pt.SubGap = time.Duration(pt.Sub) * gap / 2
	}
	// The headway keeps the mean rate at the target: for 8.5.1 it is
	// Burst × gap ≈ RTT·derate, as RFC 8337 §8.5.1 asks.
	pt.Headway = time.Duration(pt.Burst) * gap
	return pt, nil
}

// at is the deadline of packet i from the start and the number of packets
// in its sub-burst from i (all sent at once); i is a sub-burst's first.
func (pt pattern) at(i int64) (time.Duration, int64) {
	b, j := i/pt.Burst, i%pt.Burst
	n := min(pt.Sub-j%pt.Sub, pt.Burst-j)
	return time.Duration(b)*pt.Headway + time.Duration(j/pt.Sub)*pt.SubGap, n
}

// spacing is the shortest time between two deadlines of the pattern.
func (pt pattern) spacing() time.Duration {
	s := pt.Headway
	if pt.Burst > pt.Sub && pt.SubGap > 0 {
		s = min(s, pt.SubGap)
	}
	return s
}

// tolerance is how late a deadline may be met before it counts as missed
// (and the rest of the schedule moves by the lateness). A lone packet late
// by up to one spacing (or 1 ms) makes at most two packets back to back.
// A burst late by a large share of its headway is nearly back to back
// with the next one, a burst twice the size the pattern has (seen in the
// lab as false FAILs at derate 0.6): for bursts it is a tenth of the
// spacing, at least 100 µs.
func (pt pattern) tolerance() time.Duration {
	if pt.Sub > 1 {
		return max(pt.spacing()/10, 100*time.Microsecond)
	}
	return max(pt.spacing(), time.Millisecond)
}

func testIDs() string {
	s := ""
	for i, t := range Tests {
		if i > 0 {
			s += ", "
		}
		s += t.ID
	}
	return s
}
