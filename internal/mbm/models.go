package mbm

import (
	"fmt"
	"math"
	"time"
)

// A run-length model gives the target run length R (packets delivered
// between marks) a transport needs to hold the target window W at the
// target RTT. RFC 8337 §5.2 makes the reference model normative and lets
// the others be reported beside it, with their ratio to it.
type RunLengthModel struct {
	Name string
	// About says where the model comes from, for --plan and docs/mbm.md.
	About string
	r     func(w float64, rtt time.Duration) float64
}

// ModelReference is the name of RFC 8337's reference model (3W²).
const ModelReference = "reference"

// Mathis's constants C (metrics.md §7): an ACK per packet, delayed ACKs.
var (
	MathisC       = math.Sqrt(3.0 / 2)
	MathisCDelAck = math.Sqrt(3.0 / 4)
)

// cubicK is RFC 8312 §5.1's (C·(3+β)/(4·(1−β)))^(1/4) with C = 0.4 and
// β = 0.7 (Linux's CUBIC): CUBIC's average window is cubicK·(RTT/p)^(3/4)
// with the RTT in seconds.
var cubicK = math.Pow(0.4*(3+0.7)/(4*(1-0.7)), 0.25)

// Models are the run-length models, the reference first.
var Models = []RunLengthModel{
	{ModelReference, "RFC 8337 §5.2: Reno's sawtooth peaks at 2W so that its trough is W; the area under it, (3/2)W × 2W = 3W², must pass between marks",
		func(w float64, _ time.Duration) float64 { return 3 * w * w }},
	{"mathis", "Mathis et al. 1997 with C = √(3/2) (an ACK per packet): rate = (MSS/RTT)·C/√p, so R = 1/p = (W/C)² = (2/3)W²",
		func(w float64, _ time.Duration) float64 { return RunLengthMathis(w, MathisC) }},
	{"mathis-delack", "Mathis with C = √(3/4) (delayed ACKs): R = (W/C)² = (4/3)W²",
		func(w float64, _ time.Duration) float64 { return RunLengthMathis(w, MathisCDelAck) }},
	{"cubic", "RFC 8312 §5.1 (C = 0.4, β = 0.7): average window 1.054·(RTT/p)^(3/4), or its Reno-friendly region (2/3)W² when that tolerates more loss; R is the smaller",
		func(w float64, rtt time.Duration) float64 {
			cubic := math.Pow(w, 4.0/3) / (math.Pow(cubicK, 4.0/3) * rtt.Seconds())
			return math.Min(cubic, RunLengthMathis(w, MathisC))
		}},
}

// Model finds a run-length model by name.
func Model(name string) (RunLengthModel, error) {
	for _, m := range Models {
		if m.Name == name {
			return m, nil
		}
	}
	names := ""
	for i, m := range Models {
		if i > 0 {
			names += ", "
		}
		names += m.Name
	}
	return RunLengthModel{}, fmt.Errorf("unknown run-length model %q: want one of %s", clip(name), names)
}

// RunLength is the model's R for window w at rtt.
func (m RunLengthModel) RunLength(w int64, rtt time.Duration) float64 {
	return m.r(float64(w), rtt)
}

// RunLengthMathis inverts the Mathis model for a window of w packets:
// rate = (MSS/RTT)·C/√p with rate·RTT/MSS = w gives p = (C/w)², R = (w/C)².
func RunLengthMathis(w, c float64) float64 { return (w / c) * (w / c) }

// MathisRate is the Mathis model's rate in bit/s for a loss rate p (0 < p
// ≤ 1): (MSS × 8 / RTT) × C / √p.
func MathisRate(mssBytes int, rtt time.Duration, p, c float64) float64 {
	return float64(mssBytes) * 8 / rtt.Seconds() * c / math.Sqrt(p)
}

// clip keeps user text in an error message short.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}
