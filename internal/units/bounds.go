package units

import (
	"fmt"
	"strings"
	"time"
)

// CheckDuration bounds a setting's duration to [lo, hi]; lo = 0 allows 0
// (off). name is how the user wrote the setting (a flag: "--duration"),
// which leads the error: "--duration: want 1s to 1h, got 2h".
func CheckDuration(name string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return fmt.Errorf("%s: want %s to %s, got %s", name, ShortDuration(lo), ShortDuration(hi), ShortDuration(d))
	}
	return nil
}

// CheckCount bounds a setting's count to [lo, hi], as CheckDuration does.
func CheckCount(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("%s: want %d to %d, got %d", name, lo, hi, n)
	}
	return nil
}

// ShortDuration prints a bound as a person writes it: 1h, 24h, 1m30s, 1ms
// (time.Duration's String gives 1h0m0s).
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
