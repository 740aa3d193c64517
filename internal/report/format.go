package report

import (
	"fmt"
	"math"
	"strconv"

	"github.com/sonde-project/sonde/internal/units"
)

// finite reports whether v is a usable number (not NaN or ±Inf).
func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

const na = units.NA

// FormatMs prints a time in milliseconds with about three significant
// digits: "0.031 ms", "4.25 ms", "19.2 ms", "1250 ms".
func FormatMs(ms float64) string {
	if !finite(ms) {
		return na
	}
	return msNumber(ms) + " ms"
}

// msNumber is FormatMs without the unit, for lists that share one unit.
func msNumber(ms float64) string {
	a := math.Abs(ms)
	var dec int
	switch {
	case a == 0:
		return "0"
	case a < 1:
		dec = 3
	case a < 10:
		dec = 2
	case a < 1000:
		dec = 1
	default:
		dec = 0
	}
	return strconv.FormatFloat(ms, 'f', dec, 64)
}

// FormatDeltaMs prints a signed difference in milliseconds: "+25.8 ms".
func FormatDeltaMs(ms float64) string {
	if !finite(ms) {
		return na
	}
	s := FormatMs(ms)
	if ms >= 0 {
		return "+" + s
	}
	return s
}

// FormatDuration prints a duration given in seconds: "250 ms", "10.0 s",
// "2 min 05 s", "1 h 02 min".
func FormatDuration(s float64) string {
	if !finite(s) {
		return na
	}
	a := math.Abs(s)
	switch {
	case a < 1:
		return FormatMs(s * 1000)
	case a < 60:
		return strconv.FormatFloat(s, 'f', 1, 64) + " s"
	}
	sign := ""
	if s < 0 {
		sign = "-"
	}
	total := int64(math.Round(a))
	if total < 3600 {
		return fmt.Sprintf("%s%d min %02d s", sign, total/60, total%60)
	}
	return fmt.Sprintf("%s%d h %02d min", sign, total/3600, (total%3600)/60)
}

// FormatBits prints an amount of bits with SI prefixes: "19.3 Mbit".
func FormatBits(bits float64) string {
	s := units.FormatRate(bits)
	if s == na {
		return s
	}
	return s[:len(s)-2] // drop "/s"
}

// FormatPct prints a percentage with the given decimals: "99.95 %".
func FormatPct(pct float64, decimals int) string {
	if !finite(pct) {
		return na
	}
	return strconv.FormatFloat(pct, 'f', decimals, 64) + " %"
}

// formatRPM prints a responsiveness figure as a whole number.
func formatRPM(rpm float64) string {
	if !finite(rpm) || rpm <= 0 {
		return na
	}
	return strconv.FormatFloat(math.Round(rpm), 'f', 0, 64)
}
