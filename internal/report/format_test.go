package report

import (
	"math"
	"testing"
)

func TestFormatMs(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0, "0 ms"},
		{0.031, "0.031 ms"},
		{4.254, "4.25 ms"},
		{19.24, "19.2 ms"},
		{458, "458.0 ms"},
		{1250.4, "1250 ms"},
		{-2.5, "-2.50 ms"},
		{math.NaN(), "n/a"},
	}
	for _, tc := range tests {
		if got := FormatMs(tc.ms); got != tc.want {
			t.Errorf("FormatMs(%g) = %q, want %q", tc.ms, got, tc.want)
		}
	}
	if got := FormatDeltaMs(25.83); got != "+25.8 ms" {
		t.Errorf("FormatDeltaMs(25.83) = %q", got)
	}
	if got := FormatDeltaMs(-0.12); got != "-0.120 ms" {
		t.Errorf("FormatDeltaMs(-0.12) = %q", got)
	}
	if got := FormatDeltaMs(math.Inf(1)); got != "n/a" {
		t.Errorf("FormatDeltaMs(+Inf) = %q", got)
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		s    float64
		want string
	}{
		{0.25, "250.0 ms"},
		{10, "10.0 s"},
		{59.94, "59.9 s"},
		{125, "2 min 05 s"},
		{3725, "1 h 02 min"},
		{-3, "-3.0 s"},
		{math.NaN(), "n/a"},
	}
	for _, tc := range tests {
		if got := FormatDuration(tc.s); got != tc.want {
			t.Errorf("FormatDuration(%g) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestFormatBits(t *testing.T) {
	if got := FormatBits(19.3e6); got != "19.3 Mbit" {
		t.Errorf("FormatBits(19.3e6) = %q", got)
	}
	if got := FormatPct(99.954, 2); got != "99.95 %" {
		t.Errorf("FormatPct = %q", got)
	}
}

func TestQueueingVerdict(t *testing.T) {
	tests := []struct {
		added     float64
		wantText  string
		wantLevel string
	}{
		{-3, "download adds no queueing delay", levelOK},
		{2, "download adds 2.00 ms of queueing delay: negligible", levelOK},
		{29.9, "download adds 29.9 ms of queueing delay: low", levelOK},
		{30, "download adds 30.0 ms of queueing delay: moderate, noticeable in calls and games", levelWarn},
		{350, "download adds 350.0 ms of queueing delay: bufferbloat, calls and games suffer while it runs", levelBad},
		{450, "download adds 450.0 ms of queueing delay: severe bufferbloat, even web pages stall while it runs", levelBad},
		{math.NaN(), "", ""},
	}
	for _, tc := range tests {
		text, level := queueingVerdict("download", tc.added)
		if text != tc.wantText || level != tc.wantLevel {
			t.Errorf("queueingVerdict(%g) = %q, %q; want %q, %q", tc.added, text, level, tc.wantText, tc.wantLevel)
		}
	}
}
