// Package mbm is the pure model and statistics of Model Based Metrics
// (RFC 8337; metrics.md §7): the target window W and run length R from a
// target rate, RTT and MTU, the pass and fail loss thresholds p0 and p1, a
// per-packet Wald SPRT with a truncated maximum sample size, the Wilson
// interval of the loss estimate, the Mathis model and the spatial
// composition of subpath results. It does no I/O and reads no clock: a
// test driver feeds the SPRT packet by packet.
package mbm

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultHeaderOverhead is the bytes of each MTU-sized packet that are
// not payload: IPv4 (20) + TCP (20) + the TCP timestamp option (12), what
// Linux sends by default (tcp_timestamps=1). RFC 8337 §5.1 counts the
// headers against the MTU; IPv6 would be 72.
const DefaultHeaderOverhead = 52

// Default error probabilities of the SPRT (RFC 8337 §5.3, seed 002).
const (
	DefaultAlpha = 0.05
	DefaultBeta  = 0.05
)

// DefaultTruncFactor is the default multiple of the SPRT's largest
// average sample number (Wald's, at p = s) at which a test that has not
// decided stops as INCONCLUSIVE (see Plan.MaxPackets).
const DefaultTruncFactor = 5

// Bounds of the inputs: they keep every count finite in an int64 and
// every figure a float64 can represent.
const (
	MinRTT       = time.Microsecond
	MaxRTT       = time.Minute
	MinMTU       = 68    // the IPv4 minimum (RFC 791)
	MaxMTU       = 65535 // the IPv4 total-length limit
	MaxWindow    = 1e7   // packets: R = 3·10^14, Nmax fits an int64
	MinErrorProb = 1e-6
	MaxErrorProb = 0.25 // above, the lines close in: at 0.5 they meet (h = 0)
	MinTrunc     = 1
	MaxTrunc     = 100
)

// Target is what a path must support (RFC 8337 §5): a rate, an RTT and an
// MTU, and the header bytes of each packet that carry no payload.
type Target struct {
	RateBps        float64
	RTT            time.Duration
	MTU            int
	HeaderOverhead int
}

// Validate bounds every input, one line per problem.
func (t Target) Validate() error {
	switch {
	case math.IsNaN(t.RateBps) || t.RateBps <= 0 || t.RateBps > 1e15:
		return fmt.Errorf("target rate %g bit/s: want more than 0 and at most 1 Pbit/s", t.RateBps)
	case t.RTT < MinRTT || t.RTT > MaxRTT:
		return fmt.Errorf("target RTT %s: want %s to %s", t.RTT, MinRTT, MaxRTT)
	case t.MTU < MinMTU || t.MTU > MaxMTU:
		return fmt.Errorf("target MTU %d: want %d to %d bytes", t.MTU, MinMTU, MaxMTU)
	case t.HeaderOverhead < 0 || t.HeaderOverhead >= t.MTU:
		return fmt.Errorf("header overhead %d: want 0 to %d bytes (below the MTU %d)", t.HeaderOverhead, t.MTU-1, t.MTU)
	}
	return nil
}

// Window is the target window W = ceil(rate × RTT / (8 × (MTU − header
// overhead))) in packets (metrics.md §7: a ceiling, with the headers out
// of the payload; m-lab/mbm's integer floor under-estimated it).
func (t Target) Window() (int64, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	w := math.Ceil(t.RateBps * t.RTT.Seconds() / (8 * float64(t.MTU-t.HeaderOverhead)))
	if w > MaxWindow {
		return 0, fmt.Errorf("target window %.3g packets: more than %.0g, beyond what a test can check", w, float64(MaxWindow))
	}
	return int64(w), nil
}

// ErrRunLength is returned for a target whose run length R is at most 4:
// p1 = 4/R would be at least 1, so no loss rate could FAIL.
var ErrRunLength = errors.New("target run length too short")
