package report

import (
	"fmt"
	"math"
	"strconv"
)

// finite reports whether v is a usable number (not NaN or ±Inf).
func finite(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0)
}

const na = "n/a"

// unit is one step of a prefix ladder, smallest first.
type unit struct {
	scale    float64
	name     string
	decimals int
}

var rateUnits = []unit{
	{1, "bit/s", 0},
	{1e3, "kbit/s", 1},
	{1e6, "Mbit/s", 1},
	{1e9, "Gbit/s", 2},
	{1e12, "Tbit/s", 2},
}

var byteUnits = []unit{
	{1, "B", 0},
	{1 << 10, "KiB", 1},
	{1 << 20, "MiB", 1},
	{1 << 30, "GiB", 2},
	{1 << 40, "TiB", 2},
}

// roundTo rounds v to the given number of decimals.
func roundTo(v float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(v*p) / p
}

// formatUnits prints v in the largest unit of the ladder that keeps it at
// or above 1, moving up one step when rounding reaches the next unit's size
// ("999.96 Mbit/s" prints as "1.00 Gbit/s").
func formatUnits(v float64, ladder []unit) string {
	if !finite(v) {
		return na
	}
	sign := ""
	if v < 0 {
		sign = "-"
		v = -v
	}
	i := 0
	for i+1 < len(ladder) && v >= ladder[i+1].scale {
		i++
	}
	r := roundTo(v/ladder[i].scale, ladder[i].decimals)
	if i+1 < len(ladder) && r*ladder[i].scale >= ladder[i+1].scale {
		i++
		r = roundTo(v/ladder[i].scale, ladder[i].decimals)
	}
	if r == 0 {
		sign = ""
	}
	return sign + strconv.FormatFloat(r, 'f', ladder[i].decimals, 64) + " " + ladder[i].name
}

// FormatRate prints a rate in bit/s with SI prefixes: "941.3 Mbit/s",
// "12.0 kbit/s", "1.20 Gbit/s", "950 bit/s". Non-finite values give "n/a".
func FormatRate(bps float64) string {
	return formatUnits(bps, rateUnits)
}

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

// FormatBytes prints a size with IEC prefixes: "512 B", "64.0 KiB",
// "3.2 MiB", "1.09 GiB".
func FormatBytes(b float64) string {
	return formatUnits(b, byteUnits)
}

// FormatBits prints an amount of bits with SI prefixes: "19.3 Mbit".
func FormatBits(bits float64) string {
	s := FormatRate(bits)
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
