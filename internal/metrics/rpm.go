package metrics

import (
	"errors"
	"fmt"
	"math"
)

// RPMTrim is the share of the largest probe times the responsiveness draft's
// trimmed mean drops (TMP = 95%).
const RPMTrim = 0.05

// RPM is responsiveness under working conditions in round trips per minute
// (metrics.md §5; draft-ietf-ippm-responsiveness §5.3.1):
//
//	foreign = 60000 / mean(TM(tcp_f), TM(tls_f), TM(http_f))
//	loaded  = 60000 / TM(http_l)
//	RPM     = (foreign + loaded) / 2
//
// Inputs are probe times in ms; TM is TrimmedMeanTop(x, RPMTrim). Without
// TLS (foreignTLS empty) the foreign mean is over tcp_f and http_f only, as
// the draft's TCP-only case says: a zero must not stand in for tls_f. It is
// an error if tcp_f, http_f or http_l has no finite sample, or if a trimmed
// mean is not positive.
func RPM(foreignTCP, foreignTLS, foreignHTTP, selfHTTP []float64) (rpm float64, err error) {
	parts := []struct {
		name string
		xs   []float64
	}{{"foreign tcp", foreignTCP}, {"foreign tls", foreignTLS}, {"foreign http", foreignHTTP}, {"self http", selfHTTP}}
	var tm [4]float64
	for i, p := range parts {
		if len(finiteSorted(p.xs)) == 0 {
			if i == 1 && len(p.xs) == 0 {
				continue // plain HTTP: no TLS handshake to time
			}
			return 0, fmt.Errorf("rpm: no %s samples", p.name)
		}
		tm[i] = TrimmedMeanTop(p.xs, RPMTrim)
		if tm[i] <= 0 {
			return 0, fmt.Errorf("rpm: %s trimmed mean %g ms is not positive", p.name, tm[i])
		}
	}
	foreign := (tm[0] + tm[2]) / 2
	if len(foreignTLS) > 0 {
		foreign = (tm[0] + tm[1] + tm[2]) / 3
	}
	rpm = (60000/foreign + 60000/tm[3]) / 2
	if math.IsInf(rpm, 0) {
		return 0, errors.New("rpm: probe times too small for a finite result")
	}
	return rpm, nil
}

// IdleRPM is the idle equivalent of RPM: 60000 / TM(idle RTT in ms), with the
// same 95th-percentile trimmed mean. It returns 0 for no (or no positive)
// samples, so a missing baseline never reads as infinitely responsive.
func IdleRPM(rttMs []float64) float64 {
	tm := TrimmedMeanTop(rttMs, RPMTrim)
	if tm <= 0 {
		return 0
	}
	if r := 60000 / tm; !math.IsInf(r, 0) {
		return r
	}
	return 0
}

// RPMBand is the draft's class of a responsiveness figure
// (draft-ietf-ippm-responsiveness-09 §1.2): Poor below 300, Fair below
// 1000, Good below 6000, else Excellent; "" for no figure.
func RPMBand(rpm float64) string {
	switch {
	case !(rpm > 0) || math.IsInf(rpm, 0):
		return ""
	case rpm < 300:
		return "Poor"
	case rpm < 1000:
		return "Fair"
	case rpm < 6000:
		return "Good"
	}
	return "Excellent"
}

// RPMAppleBand is the Low/Medium/High label networkQuality prints. Apple
// does not document it; these cut-offs (Low below 200, Medium below 1000)
// fit its observed outputs (spec/grades.md), so it is shown as
// "Apple-style", never as Apple's.
func RPMAppleBand(rpm float64) string {
	switch {
	case !(rpm > 0) || math.IsInf(rpm, 0):
		return ""
	case rpm < 200:
		return "Low"
	case rpm < 1000:
		return "Medium"
	}
	return "High"
}
