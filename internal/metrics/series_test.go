package metrics

import (
	"slices"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func TestRates(t *testing.T) {
	counts := []ByteCount{
		{TS: 0, Bytes: 0},
		{TS: 0.5, Bytes: 1e6},   // 1 MB in 0.5 s: 16 Mbit/s
		{TS: 1.0, Bytes: 3e6},   // 2 MB in 0.5 s: 32 Mbit/s
		{TS: 1.0, Bytes: 3e6},   // no time passed: skipped
		{TS: 2.0, Bytes: 4e6},   // 1 MB in 1 s: 8 Mbit/s
		{TS: 2.5, Bytes: 3.5e6}, // count went backwards: skipped
	}
	want := []model.RatePoint{{TS: 0.5, Bps: 16e6}, {TS: 1.0, Bps: 32e6}, {TS: 2.0, Bps: 8e6}}
	if got := Rates(counts); !slices.Equal(got, want) {
		t.Errorf("Rates = %v, want %v", got, want)
	}
	if got := Rates(nil); len(got) != 0 {
		t.Errorf("Rates(nil) = %v", got)
	}
	if got := Rates(counts[:1]); len(got) != 0 {
		t.Errorf("Rates(one count) = %v", got)
	}
}

func TestBytesBetween(t *testing.T) {
	counts := []ByteCount{{TS: 0, Bytes: 0}, {TS: 0.5, Bytes: 1e6}, {TS: 1.0, Bytes: 3e6}, {TS: 1.0, Bytes: 3e6}, {TS: 2.0, Bytes: 4e6}}
	tests := []struct {
		name   string
		counts []ByteCount
		t0, t1 float64
		want   int64
	}{
		{"whole", counts, 0, 2, 4e6},
		// 0.5 MB at 0.25 s, 3.5 MB at 1.5 s.
		{"interpolated", counts, 0.25, 1.5, 3e6},
		{"on samples", counts, 0.5, 1.0, 2e6},
		{"before start held", counts, -1, 0.5, 1e6},
		{"after end held", counts, 1.0, 10, 1e6},
		{"entirely after", counts, 5, 10, 0},
		{"reversed", counts, 1.5, 0.25, 0},
		{"empty", nil, 0, 1, 0},
		// 1 byte over 3 s: a third of a byte rounds to 0, two thirds to 1.
		{"rounded", []ByteCount{{TS: 0, Bytes: 0}, {TS: 3, Bytes: 1}}, 0, 1, 0},
		{"rounded up", []ByteCount{{TS: 0, Bytes: 0}, {TS: 3, Bytes: 1}}, 0, 2, 1},
	}
	for _, tt := range tests {
		if got := BytesBetween(tt.counts, tt.t0, tt.t1); got != tt.want {
			t.Errorf("%s: BytesBetween(%g, %g) = %d, want %d", tt.name, tt.t0, tt.t1, got, tt.want)
		}
	}
}
