package metrics

import (
	"math"
	"testing"
)

// rep is n copies of v.
func rep(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestRPM(t *testing.T) {
	// 19 samples of v and one outlier of 1000 ms: the outlier lies above
	// the 95th percentile, so TM = v.
	withOutlier := func(v float64) []float64 { return append(rep(v, 19), 1000) }
	tests := []struct {
		name                string
		tcp, tls, http, slf []float64
		want                float64
		wantErr             bool
	}{
		// foreign = 60000 / ((10+20+30)/3) = 3000; loaded = 60000/60 = 1000.
		{"TLS", rep(10, 5), rep(20, 5), rep(30, 5), rep(60, 5), 2000, false},
		{"outliers trimmed", withOutlier(10), withOutlier(20), withOutlier(30), withOutlier(60), 2000, false},
		// Plain HTTP: foreign = 60000 / ((10+30)/2) = 3000, not /3 with a zero.
		{"no TLS", rep(10, 5), nil, rep(30, 5), rep(60, 5), 2000, false},
		// foreign = 60000/((20+20+20)/3) = 3000; loaded = 60000/120 = 500 → 1750.
		{"unequal halves", rep(20, 3), rep(20, 3), rep(20, 3), rep(120, 3), 1750, false},
		// One sample each: TM is the sample.
		{"single samples", []float64{15}, []float64{15}, []float64{15}, []float64{15}, 4000, false},
		{"no tcp", nil, rep(20, 5), rep(30, 5), rep(60, 5), 0, true},
		{"no http", rep(10, 5), rep(20, 5), nil, rep(60, 5), 0, true},
		{"no self", rep(10, 5), rep(20, 5), rep(30, 5), nil, 0, true},
		{"TLS all NaN", rep(10, 5), []float64{math.NaN()}, rep(30, 5), rep(60, 5), 0, true},
		{"zero times", rep(0, 5), nil, rep(0, 5), rep(60, 5), 0, true},
		{"negative self", rep(10, 5), nil, rep(30, 5), rep(-1, 5), 0, true},
	}
	for _, tt := range tests {
		got, err := RPM(tt.tcp, tt.tls, tt.http, tt.slf)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: err = %v, want error %v", tt.name, err, tt.wantErr)
			continue
		}
		if !near(got, tt.want, 1e-12) {
			t.Errorf("%s: RPM = %g, want %g", tt.name, got, tt.want)
		}
	}
}

func TestIdleRPM(t *testing.T) {
	tests := []struct {
		name string
		rtts []float64
		want float64
	}{
		{"20 ms", rep(20, 10), 3000},
		// 1..19 ms plus a 1000 ms outlier: TM = 10 ms.
		{"outlier trimmed", append(seq(1, 19), 1000), 6000},
		{"empty", nil, 0},
		{"zeros", rep(0, 4), 0},
	}
	for _, tt := range tests {
		if got := IdleRPM(tt.rtts); !near(got, tt.want, 1e-12) {
			t.Errorf("%s: IdleRPM = %g, want %g", tt.name, got, tt.want)
		}
	}
}
