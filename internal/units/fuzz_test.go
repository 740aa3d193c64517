package units

import (
	"math"
	"testing"
)

// FuzzParse: no input panics, every accepted value is finite and within
// bounds, and a formatted rate parses back.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"100M", "100Mbit", "100mbit/s", "1G", "544k", "1.5Gbit/s", "100Mbps", "off", "0",
		"64KiB", "10GB", "-1", "1e400", "NaN", "0x1p3", "941.3 Mbit/s", "1_0", "B", "i"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseRate(s); err == nil {
			if math.IsNaN(r) || r < 0 || r > MaxRate {
				t.Fatalf("ParseRate(%q) = %v", s, r)
			}
			back, err := ParseRate(FormatRate(r))
			// FormatRate keeps 3-4 significant digits: 1.0 kbit/s is 950 to 1049 bit/s.
			if err != nil || math.Abs(back-r) > r*0.05+0.5 {
				t.Fatalf("ParseRate(FormatRate(%v) = %q) = %v, %v", r, FormatRate(r), back, err)
			}
		}
		if r, err := ParseRateLimit(s); err == nil && (math.IsNaN(r) || r < 0 || r > MaxRate) {
			t.Fatalf("ParseRateLimit(%q) = %v", s, r)
		}
		if b, err := ParseBytes(s); err == nil && (b < 0 || b > MaxBytes) {
			t.Fatalf("ParseBytes(%q) = %v", s, b)
		}
		if n, err := ParseCountLimit(s, 1<<20); err == nil && (n < 0 || n > 1<<20) {
			t.Fatalf("ParseCountLimit(%q) = %v", s, n)
		}
	})
}
