package metrics

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// near reports whether got is within a relative (or, near zero, absolute)
// tolerance of want.
func near(got, want, tol float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestSummarize(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		xs   []float64
		want model.Stats
	}{
		{"empty", nil, model.Stats{}},
		{"only non-finite", []float64{nan, inf, -inf}, model.Stats{}},
		{"single", []float64{42}, model.Stats{N: 1, Min: 42, P10: 42, P50: 42, P90: 42, P99: 42, P999: 42, Max: 42, Mean: 42}},
		// 1..10 shuffled: rank h = 9p/100; p10 h=0.9 → 1.9, p50 h=4.5 → 5.5,
		// p90 h=8.1 → 9.1, p99 h=8.91 → 9.91, p99.9 h=8.991 → 9.991;
		// sample variance 82.5/9, stddev 3.0276503540974917.
		{"one to ten", []float64{7, 3, 10, 1, 5, 9, 2, 8, 6, 4}, model.Stats{
			N: 10, Min: 1, P10: 1.9, P50: 5.5, P90: 9.1, P99: 9.91, P999: 9.991, Max: 10,
			Mean: 5.5, Stddev: 3.0276503540974917}},
		// Mean 5, squared deviations 32, sample stddev sqrt(32/7).
		// p10 h=0.7 → 2+0.7·2 = 3.4; p50 h=3.5 → 4.5; p90 h=6.3 → 7+0.3·2 = 7.6;
		// p99 h=6.93 → 8.86; p99.9 h=6.993 → 8.986.
		{"textbook", []float64{2, 4, 4, 4, 5, 5, 7, 9}, model.Stats{
			N: 8, Min: 2, P10: 3.4, P50: 4.5, P90: 7.6, P99: 8.86, P999: 8.986, Max: 9,
			Mean: 5, Stddev: math.Sqrt(32.0 / 7)}},
		// NaN and ±Inf are dropped, not counted.
		{"non-finite dropped", []float64{nan, 1, inf, 3, -inf}, model.Stats{
			N: 2, Min: 1, P10: 1.2, P50: 2, P90: 2.8, P99: 2.98, P999: 2.998, Max: 3,
			Mean: 2, Stddev: math.Sqrt2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.xs)
			if got.N != tt.want.N {
				t.Fatalf("N = %d, want %d", got.N, tt.want.N)
			}
			pairs := []struct {
				name      string
				got, want float64
			}{
				{"min", got.Min, tt.want.Min}, {"p10", got.P10, tt.want.P10},
				{"p50", got.P50, tt.want.P50}, {"p90", got.P90, tt.want.P90},
				{"p99", got.P99, tt.want.P99}, {"p99.9", got.P999, tt.want.P999},
				{"max", got.Max, tt.want.Max}, {"mean", got.Mean, tt.want.Mean},
				{"stddev", got.Stddev, tt.want.Stddev},
			}
			for _, p := range pairs {
				if !near(p.got, p.want, 1e-12) {
					t.Errorf("%s = %.15g, want %.15g", p.name, p.got, p.want)
				}
			}
		})
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	xs := []float64{3, 1, 2}
	Summarize(xs)
	if !slices.Equal(xs, []float64{3, 1, 2}) {
		t.Fatalf("input changed to %v", xs)
	}
}

func TestSummarizeHuge(t *testing.T) {
	// Sums and squares of these overflow without scaling.
	m := math.MaxFloat64
	s := Summarize([]float64{m, m, m})
	if s.Mean != m || s.Stddev != 0 {
		t.Errorf("constant MaxFloat64: mean %g stddev %g", s.Mean, s.Stddev)
	}
	s = Summarize([]float64{-m, m})
	if s.Mean != 0 || s.Stddev != math.MaxFloat64 || s.P50 != 0 {
		t.Errorf("±MaxFloat64: mean %g p50 %g stddev %g, want 0, 0, saturated", s.Mean, s.P50, s.Stddev)
	}
	s = Summarize([]float64{1e200, 3e200})
	if !near(s.Mean, 2e200, 1e-12) || !near(s.Stddev, math.Sqrt2*1e200, 1e-12) {
		t.Errorf("1e200, 3e200: mean %g stddev %g", s.Mean, s.Stddev)
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{10, 20, 30, 40}
	tests := []struct {
		sorted []float64
		p      float64
		want   float64
	}{
		{s, 0, 10},
		{s, 100, 40},
		{s, 50, 25},   // h = 1.5
		{s, 25, 17.5}, // h = 0.75
		{s, 90, 37},   // h = 2.7
		{s, -5, 10},   // clamped
		{s, 200, 40},  // clamped
		{s, math.NaN(), 10},
		{nil, 50, 0},
		{[]float64{7}, 99.9, 7},
		{[]float64{1, 1, 1, 5}, 50, 1},
	}
	for _, tt := range tests {
		if got := Percentile(tt.sorted, tt.p); !near(got, tt.want, 1e-12) {
			t.Errorf("Percentile(%v, %g) = %g, want %g", tt.sorted, tt.p, got, tt.want)
		}
	}
}

func TestTrimmedMean(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		frac float64
		want float64
	}{
		{"empty", nil, 0.05, 0},
		{"no trim", []float64{1, 2, 3, 10}, 0, 4},
		// n = 20, 5% → one value off each end: mean of 2..19.
		{"5% of 20", append(seq(1, 19), 1000), 0.05, 10.5},
		// n = 10, 5% → floor(0.5) = 0: nothing dropped.
		{"5% of 10", append(seq(1, 9), 100), 0.05, 14.5},
		{"10% of 10", append(seq(1, 9), 100), 0.1, 5.5},
		{"half is median", []float64{1, 2, 3, 100}, 0.5, 2.5},
		{"negative frac", []float64{1, 2, 3}, -1, 2},
		{"NaN dropped", []float64{math.NaN(), 2, 4}, 0, 3},
	}
	for _, tt := range tests {
		if got := TrimmedMean(tt.xs, tt.frac); !near(got, tt.want, 1e-12) {
			t.Errorf("%s: TrimmedMean = %g, want %g", tt.name, got, tt.want)
		}
	}
}

func TestTrimmedMeanTop(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		frac float64
		want float64
	}{
		{"empty", nil, 0.05, 0},
		// n = 20: p95 at h = 18.05 is 19 + 0.05·981 = 68.05; 1000 is above it.
		{"outlier of 20", append(seq(1, 19), 1000), 0.05, 10},
		// n = 10: p95 = 9 + 0.55·91 = 59.05; 100 dropped.
		{"outlier of 10", append(seq(1, 9), 100), 0.05, 5},
		// 1..10: p95 = 9.55, so 10 is above it and dropped.
		{"one to ten", seq(1, 10), 0.05, 5},
		{"ties kept", []float64{5, 5, 5, 5}, 0.05, 5},
		{"no trim", []float64{1, 2, 3, 10}, 0, 4},
		{"single", []float64{7}, 0.05, 7},
		{"all trimmed keeps min", []float64{3, 1, 2}, 1, 1},
		{"Inf dropped", []float64{math.Inf(1), 4, 4}, 0.05, 4},
	}
	for _, tt := range tests {
		if got := TrimmedMeanTop(tt.xs, tt.frac); !near(got, tt.want, 1e-12) {
			t.Errorf("%s: TrimmedMeanTop = %g, want %g", tt.name, got, tt.want)
		}
	}
}

// seq is lo, lo+1, …, hi.
func seq(lo, hi int) []float64 {
	var out []float64
	for i := lo; i <= hi; i++ {
		out = append(out, float64(i))
	}
	return out
}

// FuzzSummarize feeds arbitrary float64 bit patterns (NaN, ±Inf,
// subnormals, ±MaxFloat64 included) and checks that nothing panics, no
// statistic is NaN or infinite, and the statistics are ordered.
func FuzzSummarize(f *testing.F) {
	add := func(p float64, xs ...float64) {
		b := make([]byte, 0, 8*len(xs))
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		f.Add(b, p)
	}
	add(50, 1, 2, 3)
	add(99.9, math.NaN(), math.Inf(1), -math.MaxFloat64, math.MaxFloat64)
	add(math.NaN(), 5e-324, -5e-324, 0)
	add(-1, 1e308, 1e308, -1e308)
	add(150)
	f.Fuzz(func(t *testing.T, b []byte, p float64) {
		var xs []float64
		for len(b) >= 8 {
			xs = append(xs, math.Float64frombits(binary.LittleEndian.Uint64(b)))
			b = b[8:]
		}
		finite := 0
		for _, x := range xs {
			if !math.IsNaN(x) && !math.IsInf(x, 0) {
				finite++
			}
		}
		s := Summarize(xs)
		if s.N != finite {
			t.Fatalf("N = %d, want %d finite of %d", s.N, finite, len(xs))
		}
		vals := []float64{s.Min, s.P10, s.P50, s.P90, s.P99, s.P999, s.Max, s.Mean, s.Stddev}
		for _, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("non-finite statistic in %+v", s)
			}
		}
		if s.N == 0 {
			if s != (model.Stats{}) {
				t.Fatalf("empty sample gave %+v", s)
			}
			return
		}
		ordered := []float64{s.Min, s.P10, s.P50, s.P90, s.P99, s.P999, s.Max}
		if !slices.IsSorted(ordered) {
			t.Fatalf("percentiles out of order: %v", ordered)
		}
		if s.Mean < s.Min || s.Mean > s.Max || s.Stddev < 0 {
			t.Fatalf("mean %g outside [%g, %g] or stddev %g < 0", s.Mean, s.Min, s.Max, s.Stddev)
		}
		sorted := finiteSorted(xs)
		for _, v := range []float64{Percentile(sorted, p), TrimmedMean(xs, p/100), TrimmedMeanTop(xs, p/100)} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < s.Min || v > s.Max {
				t.Fatalf("p=%g: %g not finite or outside [%g, %g]", p, v, s.Min, s.Max)
			}
		}
	})
}
