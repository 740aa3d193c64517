// Package units is sonde's one syntax for rates and sizes, on the command
// line, in link specifications and in reports: ParseRate and FormatRate
// (bit/s), ParseBytes and FormatBytes, and the one way to say "no limit"
// (ParseRateLimit, ParseBytesLimit, ParseCountLimit: "off" or "0"; a
// negative value is an error).
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Off is how a limit that does not apply is written, and parsed ("0" too).
const Off = "off"

// MaxRate bounds a parsed rate (1 Pbit/s): a figure above it is a typo,
// and it keeps every later computation finite.
const MaxRate = 1e15

// MaxBytes bounds a parsed size (1 EiB, below the int64 limit).
const MaxBytes = 1 << 60

// maxInput bounds the text a parser looks at: a rate or size is short.
const maxInput = 64

// ErrNegative is returned for a negative rate, size or limit.
var ErrNegative = errors.New("negative")

// rateSuffixes are the unit spellings after the prefix, longest first:
// "100M", "100Mbit", "100mbit/s", "100Mbps", "100Mb/s". Rates are bit/s.
// A "B" (bytes) is refused rather than read as bits.
var rateSuffixes = []string{"bits/s", "bit/s", "bps", "b/s", "bit"}

// ParseRate reads a rate in bit/s: a number with an optional prefix k, M,
// G, T (powers of 1000, any case) and an optional unit bit, bit/s, bps or
// b/s, e.g. "100M", "100Mbit", "100mbit/s", "1G", "544k", "1.5Gbit/s",
// "100Mbps". The rate is finite, at least 0 and at most MaxRate.
func ParseRate(s string) (float64, error) {
	v, err := parseRate(s)
	if err != nil {
		return 0, fmt.Errorf("invalid rate %q: want e.g. 100M, 100Mbit/s, 1.5G or 544k (bit/s)%s", clip(s), why(err))
	}
	return v, nil
}

func parseRate(s string) (float64, error) {
	if len(s) > maxInput {
		return 0, errors.New("too long")
	}
	if strings.Contains(s, "B") {
		return 0, errors.New("B is bytes, a rate is in bits")
	}
	t := strings.ToLower(strings.TrimSpace(s))
	for _, u := range rateSuffixes {
		if n, ok := strings.CutSuffix(t, u); ok && n != "" {
			t = n
			break
		}
	}
	t, mult := cutPrefix(strings.TrimSpace(t), "kmgt", 1000)
	v, err := number(strings.TrimSpace(t))
	if err != nil {
		return 0, err
	}
	v *= mult
	if v > MaxRate {
		return 0, fmt.Errorf("above %s", FormatRate(MaxRate))
	}
	return v, nil
}

// cutPrefix removes a trailing SI prefix of letters (smallest first: k, M,
// G, T) from t and returns its multiplier, a power of base (1 if none).
func cutPrefix(t, letters string, base float64) (string, float64) {
	if t == "" {
		return t, 1
	}
	i := strings.IndexByte(letters, t[len(t)-1])
	if i < 0 {
		return t, 1
	}
	return t[:len(t)-1], math.Pow(base, float64(i+1))
}

// ParseRateLimit reads a rate limit: "off" or "0" for no limit (0 is
// returned), else a rate as ParseRate reads it.
func ParseRateLimit(s string) (float64, error) {
	if isOff(s) {
		return 0, nil
	}
	return ParseRate(s)
}

// ParseBytes reads a size in bytes: a whole number with an optional prefix
// k, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024) and an
// optional "B", e.g. "500M", "10GB", "64Ki", "1MiB". Prefixes are case
// sensitive except k/K ("m" would be milli, "b" bits). A size is whole
// bytes, at least 0 and at most MaxBytes.
func ParseBytes(s string) (int64, error) {
	v, err := parseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: want e.g. 500M, 10GB or 64KiB (bytes)%s", clip(s), why(err))
	}
	return v, nil
}

func parseBytes(s string) (int64, error) {
	if len(s) > maxInput {
		return 0, errors.New("too long")
	}
	t := strings.TrimSuffix(strings.TrimSpace(s), "B")
	base := 1000.0
	if n, ok := strings.CutSuffix(t, "i"); ok {
		t, base = n, 1024
	}
	if strings.HasSuffix(t, "k") {
		t = t[:len(t)-1] + "K" // kB and KB alike
	}
	t, mult := cutPrefix(t, "KMGT", base)
	if mult == 1 && base == 1024 {
		return 0, errors.New("Ki, Mi, Gi or Ti")
	}
	v, err := number(strings.TrimSpace(t))
	if err != nil {
		return 0, err
	}
	v *= mult
	if v > MaxBytes {
		return 0, errors.New("above 1 EiB")
	}
	if v != math.Trunc(v) {
		return 0, errors.New("not a whole number of bytes")
	}
	return int64(v), nil
}

// ParseBytesLimit reads a size limit: "off" or "0" for no limit (0 is
// returned), else a size as ParseBytes reads it.
func ParseBytesLimit(s string) (int64, error) {
	if isOff(s) {
		return 0, nil
	}
	return ParseBytes(s)
}

// ParseCountLimit reads a count limit between 1 and hi: "off" or "0" for no
// limit (0 is returned).
func ParseCountLimit(s string, hi int64) (int64, error) {
	if isOff(s) {
		return 0, nil
	}
	if len(s) > maxInput {
		return 0, fmt.Errorf("invalid limit %q: too long", clip(s))
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("invalid limit %q: want a count or %s", clip(s), Off)
	case v < 0:
		return 0, fmt.Errorf("invalid limit %q: %w (want a count, or %s for no limit)", s, ErrNegative, Off)
	case v > hi:
		return 0, fmt.Errorf("invalid limit %q: at most %d (or %s)", s, hi, Off)
	}
	return v, nil
}

func isOff(s string) bool {
	t := strings.ToLower(strings.TrimSpace(s))
	return t == Off || t == "0"
}

// number reads a plain non-negative decimal: no sign, hex, NaN, Inf or
// underscores, which strconv.ParseFloat would accept.
func number(t string) (float64, error) {
	if t == "" {
		return 0, errors.New("no number")
	}
	if t[0] == '-' {
		return 0, ErrNegative
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, fmt.Errorf("unexpected %q", string(c))
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errors.New("not a number")
	}
	if v < 0 {
		return 0, ErrNegative
	}
	return v, nil
}

func why(err error) string { return ": " + err.Error() }

// clip keeps an echoed input to one short line.
func clip(s string) string {
	if len(s) > maxInput {
		return s[:maxInput] + "…"
	}
	return s
}

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

// NA is what a formatter prints for a value that is not a number.
const NA = "n/a"

// FormatRate prints a rate in bit/s with SI prefixes: "941.3 Mbit/s",
// "12.0 kbit/s", "1.20 Gbit/s", "950 bit/s". Non-finite values give "n/a".
// ParseRate reads what it prints (to its precision).
func FormatRate(bps float64) string {
	return formatUnits(bps, rateUnits)
}

// FormatRatePrecise prints a rate in bit/s to four significant figures
// in FormatRate's unit, for a figure compared with a threshold in a
// sentence: "9.987 Mbit/s", "10 Mbit/s", "1.2 Gbit/s".
func FormatRatePrecise(bps float64) string {
	if math.IsNaN(bps) || math.IsInf(bps, 0) {
		return NA
	}
	i := 0
	for i+1 < len(rateUnits) && math.Abs(bps) >= rateUnits[i+1].scale {
		i++
	}
	return strconv.FormatFloat(bps/rateUnits[i].scale, 'g', 4, 64) + " " + rateUnits[i].name
}

// FormatRateLimit prints a rate limit: "off" for 0 or +Inf (no limit),
// else as FormatRate.
func FormatRateLimit(bps float64) string {
	if bps == 0 || math.IsInf(bps, 1) {
		return Off
	}
	return FormatRate(bps)
}

// FormatBytes prints a size with IEC prefixes: "512 B", "64.0 KiB",
// "3.2 MiB", "1.09 GiB". ParseBytes reads what it prints when the figure is
// whole.
func FormatBytes(b float64) string {
	return formatUnits(b, byteUnits)
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
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return NA
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

// FloorDiv is a/b rounded toward −∞ (b > 0): the number of the grid cell
// of width b holding a, also for a < 0 (a time before 1970), where Go's
// division rounds toward 0.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// FloorTo is the start of the grid cell of width span holding t (a
// minute, an hour, a day in ns): the one floor-to-grid of every time grid.
func FloorTo(t, span int64) int64 { return FloorDiv(t, span) * span }

// CeilTo is the end of the cell holding t, t itself on a boundary.
func CeilTo(t, span int64) int64 {
	if f := FloorTo(t, span); f != t {
		return f + span
	}
	return t
}
