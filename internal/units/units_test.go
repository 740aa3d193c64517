package units

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"100M": 100e6, "100Mbit": 100e6, "100mbit/s": 100e6, "1G": 1e9, "544k": 544e3, "544K": 544e3,
		"1.5Gbit/s": 1.5e9, "100Mbps": 100e6, "100Mb/s": 100e6, "0.7Mbit": 0.7e6, "1500": 1500,
		"10Gbps": 10e9, " 20 Mbit/s ": 20e6, "941.3 Mbit/s": 941.3e6, "2T": 2e12, "3bits/s": 3, "0": 0, "1e6": 1e6,
	} {
		got, err := ParseRate(in)
		if err != nil || math.Abs(got-want) > want*1e-12 {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fast", "-1M", "1X", "NaN", "Inf", "0x10", "1_000", "100MB", "100MB/s", "M", "1e300", "off", "1.5.2M"} {
		if v, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", bad, v)
		}
	}
	if _, err := ParseRate("-5M"); !errors.Is(err, ErrNegative) {
		// The message says why; the error need not wrap, but it must exist.
		if err == nil {
			t.Error("ParseRate(-5M) accepted")
		}
	}
}

func TestParseRateLimit(t *testing.T) {
	for in, want := range map[string]float64{"off": 0, "OFF": 0, "0": 0, "200M": 200e6} {
		if got, err := ParseRateLimit(in); err != nil || got != want {
			t.Errorf("ParseRateLimit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1", "unlimited", "none", ""} {
		if _, err := ParseRateLimit(bad); err == nil {
			t.Errorf("ParseRateLimit(%q) accepted", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "10G": 10e9, "64Ki": 65536, "64KiB": 65536, "1MiB": 1 << 20, "500MB": 500e6, "1.5k": 1500,
		"64.0 KiB": 65536, "3 MiB": 3 << 20, "2TB": 2e12, "12": 12,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "-5", "1.5", "5i", "1m", "2000000000G", "NaN", "", "off"} {
		if v, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %v, want an error", bad, v)
		}
	}
}

func TestParseLimits(t *testing.T) {
	if v, err := ParseBytesLimit("off"); err != nil || v != 0 {
		t.Errorf("ParseBytesLimit(off) = %v, %v", v, err)
	}
	if v, err := ParseBytesLimit("10G"); err != nil || v != 10e9 {
		t.Errorf("ParseBytesLimit(10G) = %v, %v", v, err)
	}
	for in, want := range map[string]int64{"off": 0, "0": 0, "60": 60, "1000": 1000} {
		if got, err := ParseCountLimit(in, 1000); err != nil || got != want {
			t.Errorf("ParseCountLimit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1", "1001", "x", "", "1.5"} {
		if _, err := ParseCountLimit(bad, 1000); err == nil {
			t.Errorf("ParseCountLimit(%q) accepted", bad)
		}
	}
	if _, err := ParseCountLimit("-1", 10); !errors.Is(err, ErrNegative) {
		t.Errorf("ParseCountLimit(-1): %v, want ErrNegative", err)
	}
}

func TestFormatRate(t *testing.T) {
	tests := []struct {
		bps  float64
		want string
	}{
		{941.3e6, "941.3 Mbit/s"}, {941.26e6, "941.3 Mbit/s"}, {12e3, "12.0 kbit/s"}, {1.2e9, "1.20 Gbit/s"},
		{949.28e6, "949.3 Mbit/s"}, {999.96e6, "1.00 Gbit/s"}, {999.94e6, "999.9 Mbit/s"},
		{999.96e3, "1.0 Mbit/s"}, {1e6, "1.0 Mbit/s"}, {700e3, "700.0 kbit/s"}, {950, "950 bit/s"},
		{999.6, "1.0 kbit/s"}, {0, "0 bit/s"}, {0.3, "0 bit/s"}, {-0.3, "0 bit/s"}, {-20e6, "-20.0 Mbit/s"},
		{40e9, "40.00 Gbit/s"}, {1.5e12, "1.50 Tbit/s"},
		{math.NaN(), "n/a"}, {math.Inf(1), "n/a"}, {math.Inf(-1), "n/a"},
	}
	for _, tc := range tests {
		if got := FormatRate(tc.bps); got != tc.want {
			t.Errorf("FormatRate(%g) = %q, want %q", tc.bps, got, tc.want)
		}
	}
	if got := FormatRateLimit(0); got != "off" {
		t.Errorf("FormatRateLimit(0) = %q", got)
	}
	if got := FormatRateLimit(2e6); got != "2.0 Mbit/s" {
		t.Errorf("FormatRateLimit(2e6) = %q", got)
	}
}

func TestFormatBytes(t *testing.T) {
	for b, want := range map[float64]string{
		512: "512 B", 65536: "64.0 KiB", 3.2 * (1 << 20): "3.2 MiB", 1.09 * (1 << 30): "1.09 GiB",
		0: "0 B", 1460: "1.4 KiB", 1023: "1023 B", 3 << 20: "3.0 MiB", 1.17e9: "1.09 GiB", math.Inf(1): "n/a",
	} {
		if got := FormatBytes(b); got != want {
			t.Errorf("FormatBytes(%g) = %q, want %q", b, got, want)
		}
	}
}

// TestRoundTrip: what FormatRate prints, ParseRate reads back to the
// printed precision.
func TestRoundTrip(t *testing.T) {
	for _, v := range []float64{0, 1, 950, 544e3, 0.7e6, 100e6, 941.3e6, 1.5e9, 40e9, 2e12} {
		got, err := ParseRate(FormatRate(v))
		if err != nil || math.Abs(got-v) > v*1e-3 {
			t.Errorf("ParseRate(FormatRate(%g) = %q) = %v, %v", v, FormatRate(v), got, err)
		}
	}
	for _, v := range []int64{0, 512, 65536, 3 << 20} {
		if got, err := ParseBytes(FormatBytes(float64(v))); err != nil || got != v {
			t.Errorf("ParseBytes(FormatBytes(%d)) = %v, %v", v, got, err)
		}
	}
}

func TestFloorTo(t *testing.T) {
	const h = int64(3600e9)
	for _, c := range []struct{ t, floor, ceil, div int64 }{
		{0, 0, 0, 0}, {1, 0, h, 0}, {h, h, h, 1}, {h + 1, h, 2 * h, 1}, {-1, -h, 0, -1}, {-h, -h, -h, -1}, {-h - 1, -2 * h, -h, -2},
	} {
		if f, c2, d := FloorTo(c.t, h), CeilTo(c.t, h), FloorDiv(c.t, h); f != c.floor || c2 != c.ceil || d != c.div {
			t.Errorf("%d: floor %d ceil %d div %d, want %d %d %d", c.t, f, c2, d, c.floor, c.ceil, c.div)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"24h": 24 * time.Hour, "7d": 7 * Day, "1d12h": 36 * time.Hour, "1.5d": 36 * time.Hour,
		"90m": 90 * time.Minute, "5y": 5 * Year, "1y30d": Year + 30*Day, "0": 0, " 2s ": 2 * time.Second} {
		if got, err := ParseDuration(in, 100*Year); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1d", "d", "1e308d", "NaNd", "30d1y", "1x", "101y", "-2s"} {
		if got, err := ParseDuration(bad, 100*Year); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
	if got, err := ParseDurationLimit("off", Day); err != nil || got != 0 {
		t.Errorf("off: %v %v", got, err)
	}
}

func TestRangeResolve(t *testing.T) {
	now := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r          Range
		start, end time.Time
	}{
		{Range{}, now.Add(-Day), now},
		{Range{Since: "7d"}, now.Add(-7 * Day), now},
		{Range{From: "2026-05-01", To: "2026-05-02T06:00:00Z"}, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 2, 6, 0, 0, 0, time.UTC)},
		{Range{Since: "1h", To: "2026-05-16"}, time.Date(2026, 5, 15, 23, 0, 0, 0, time.UTC), time.Date(2026, 5, 16, 0, 0, 0, 0, time.UTC)},
	} {
		s, e, err := c.r.Resolve(now, Day, 10*Year)
		if err != nil || !s.Equal(c.start) || !e.Equal(c.end) {
			t.Errorf("%+v: %v %v %v", c.r, s, e, err)
		}
	}
	for _, bad := range []Range{{Since: "1d", From: "2026-05-01"}, {Since: "0"}, {From: "2026-05-17"}, {Since: "11y"}, {To: "1969-12-31"}, {From: "x"}} {
		if _, _, err := bad.Resolve(now, Day, 10*Year); err == nil {
			t.Errorf("%+v resolved", bad)
		}
	}
}

func TestFormatRatePrecise(t *testing.T) {
	for bps, want := range map[float64]string{9.987e6: "9.987 Mbit/s", 10e6: "10 Mbit/s", 1.2e9: "1.2 Gbit/s", 544e3: "544 kbit/s", 21.6245e6: "21.62 Mbit/s", 0: "0 bit/s"} {
		if got := FormatRatePrecise(bps); got != want {
			t.Errorf("FormatRatePrecise(%g) = %q, want %q", bps, got, want)
		}
	}
}
