package metrics

import (
	"math"
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

func TestResample(t *testing.T) {
	// Counts every 0.05 s, 100 bytes each: one point per 0.25 s remains.
	var c []ByteCount
	for i := range 21 {
		c = append(c, ByteCount{TS: float64(i) * 0.05, Bytes: int64(i) * 100})
	}
	got := Resample(c, 0.25)
	want := []ByteCount{{TS: 0, Bytes: 0}, {TS: 0.25, Bytes: 500}, {TS: 0.5, Bytes: 1000}, {TS: 0.75, Bytes: 1500}, {TS: 1, Bytes: 2000}}
	if !slices.Equal(got, want) {
		t.Errorf("Resample = %v, want %v", got, want)
	}
	// Already sparser than the step: nothing to thin, nothing interpolated.
	sparse := []ByteCount{{TS: 0, Bytes: 0}, {TS: 0.5, Bytes: 10}, {TS: 10, Bytes: 1000}}
	if got := Resample(sparse, 0.1); !slices.Equal(got, sparse) {
		t.Errorf("Resample(sparse) = %v", got)
	}
}

// TestResampleBounded: a client-supplied span must not decide how much
// Resample or SumCounts allocate (the page's result endpoint once died of
// one 1e9 s span at 0.1 s steps), and no step may make them loop for ever.
func TestResampleBounded(t *testing.T) {
	for _, span := range []float64{1e5, 1e9, 1e300} {
		two := []ByteCount{{TS: 0, Bytes: 0}, {TS: span, Bytes: 1 << 40}}
		if got := Resample(two, 0.1); !slices.Equal(got, two) {
			t.Errorf("span %g: Resample of two points = %d points", span, len(got))
		}
		// More points than MaxSeriesPoints, over the span.
		dense := make([]ByteCount, 3*MaxSeriesPoints)
		for i := range dense {
			dense[i] = ByteCount{TS: span * float64(i) / float64(len(dense)-1), Bytes: int64(i)}
		}
		for name, got := range map[string][]ByteCount{
			"Resample":  Resample(dense, 0.1),
			"SumCounts": SumCounts([][]ByteCount{two, dense}, 0.05),
		} {
			if len(got) > MaxSeriesPoints || len(got) < 2 {
				t.Fatalf("span %g: %s gave %d points, want 2–%d", span, name, len(got), MaxSeriesPoints)
			}
			if got[0].TS != 0 || got[len(got)-1].TS != span {
				t.Errorf("span %g: %s ends %v … %v, want the series' own ends", span, name, got[0], got[len(got)-1])
			}
			for i := 1; i < len(got); i++ {
				if !(got[i].TS > got[i-1].TS) || got[i].Bytes < got[i-1].Bytes {
					t.Fatalf("span %g: %s point %d %v after %v", span, name, i, got[i], got[i-1])
				}
			}
		}
	}
	c := []ByteCount{{TS: 0, Bytes: 0}, {TS: 1, Bytes: 1}}
	for _, step := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := Resample(c, step); got != nil {
			t.Errorf("step %g: %v, want nil", step, got)
		}
		if got := SumCounts([][]ByteCount{c}, step); got != nil {
			t.Errorf("SumCounts, step %g: %v, want nil", step, got)
		}
	}
	for _, bad := range [][]ByteCount{
		{{TS: math.NaN()}, {TS: 1}},
		{{TS: 0}, {TS: math.Inf(1)}},
		{{TS: math.Inf(-1)}, {TS: 0}},
		{{TS: -1e308}, {TS: 1e308}},
	} {
		if got := Resample(bad, 0.1); got != nil {
			t.Errorf("%v: %v, want nil", bad, got)
		}
	}
}

// FuzzSumCounts: whatever the series and the step, the result has at most
// MaxSeriesPoints points, in time order, and the call returns.
func FuzzSumCounts(f *testing.F) {
	f.Add(0.0, 1.0, int64(0), int64(100), 2.0, int64(5), 0.1)
	f.Add(0.0, 1e9, int64(0), int64(1), 5.0, int64(0), 0.1)
	f.Add(-1e300, 1e300, int64(-5), int64(math.MaxInt64), 0.0, int64(0), 1e-300)
	f.Add(3.0, 3.0, int64(1), int64(1), 3.0, int64(1), 0.0)
	f.Fuzz(func(t *testing.T, t0, t1 float64, b0, b1 int64, t2 float64, b2 int64, step float64) {
		a := []ByteCount{{TS: t0, Bytes: b0}, {TS: t1, Bytes: b1}}
		b := []ByteCount{{TS: t2, Bytes: b2}}
		if got := Resample(a, step); len(got) > len(a) {
			t.Fatalf("Resample made %d points of %d", len(got), len(a))
		}
		for _, got := range [][]ByteCount{SumCounts([][]ByteCount{a, b}, step), Resample(a, step)} {
			if len(got) > MaxSeriesPoints {
				t.Fatalf("%d points", len(got))
			}
			for i := 1; i < len(got); i++ {
				if got[i].TS < got[i-1].TS {
					t.Fatalf("point %d at %g after %g", i, got[i].TS, got[i-1].TS)
				}
			}
		}
	})
}
