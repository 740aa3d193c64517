package metrics

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// Fuzz targets for the pure functions that take sample arrays: none may
// panic, loop without end or allocate beyond a bound on any input (NaN,
// ±Inf, empty, constant, one sample, huge spans). The sample arrays are
// decoded from the fuzzer's bytes, 8 bytes per float64.

func floatsOf(b []byte) []float64 {
	xs := make([]float64, 0, len(b)/8)
	for len(b) >= 8 {
		xs = append(xs, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		b = b[8:]
	}
	return xs
}

func bytesOf(xs ...float64) []byte {
	b := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// sampleSeeds are the shapes that broke or could break binning and
// statistics: empty, one value, constant, non-finite, extreme spans.
func sampleSeeds() [][]byte {
	return [][]byte{
		nil,
		bytesOf(1.5),
		bytesOf(0.3, 0.3, 0.3, 0.3),
		bytesOf(1e10, 1e10),
		bytesOf(12.345678, 12.345678, 12.345678),
		bytesOf(math.NaN(), math.Inf(1), math.Inf(-1)),
		bytesOf(-math.MaxFloat64, math.MaxFloat64),
		bytesOf(math.MaxFloat64, math.MaxFloat64),
		bytesOf(-1e300, 0, 1e300),
		bytesOf(5e-324, 0, -5e-324),
		bytesOf(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
		bytesOf(0.1, 0.2, math.NaN(), 0.3, 1e-15),
	}
}

// TestHistogramConstant is the reported crash: a constant sample (or one
// sample) collapsed the bin width and indexed past the bins.
func TestHistogramConstant(t *testing.T) {
	for _, xs := range [][]float64{{0.3}, {0.3, 0.3, 0.3}, {1e10, 1e10}, {12.345678, 12.345678}, {-7.1}, {0}, {math.MaxFloat64}} {
		h := Histogram(xs, 50)
		checkHistogram(t, xs, 50, h)
		if len(h) != 1 {
			t.Errorf("Histogram(%v) = %d bins, want 1", xs, len(h))
		}
	}
}

func TestHistogramHugeSpan(t *testing.T) {
	xs := []float64{-math.MaxFloat64, 0, math.MaxFloat64}
	h := Histogram(xs, 1<<30)
	checkHistogram(t, xs, 1<<30, h)
}

// checkHistogram asserts the invariants of any histogram: every finite value
// counted once, at most the allowed bins, finite ascending edges.
func checkHistogram(t *testing.T, xs []float64, maxBins int, h []model.HistBin) {
	t.Helper()
	finite := 0
	for _, x := range xs {
		if isFiniteNum(x) {
			finite++
		}
	}
	if finite == 0 {
		if h != nil {
			t.Fatalf("no finite value but %d bins", len(h))
		}
		return
	}
	if len(h) < 1 || len(h) > min(max(maxBins, 1), MaxHistogramBins) {
		t.Fatalf("%d bins for maxBins %d", len(h), maxBins)
	}
	total := 0
	for i, b := range h {
		total += b.Count
		if !isFiniteNum(b.Lo) || !isFiniteNum(b.Hi) || b.Hi < b.Lo || (i > 0 && b.Lo < h[i-1].Lo) {
			t.Fatalf("bin %d: [%g, %g)", i, b.Lo, b.Hi)
		}
	}
	if total != finite {
		t.Fatalf("bins count %d values, want %d", total, finite)
	}
}

func FuzzHistogram(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add(s, 50)
		f.Add(s, 1)
	}
	f.Add(bytesOf(1, 2), -3)
	f.Add(bytesOf(1, 1e9), 1<<40)
	f.Fuzz(func(t *testing.T, b []byte, maxBins int) {
		xs := floatsOf(b)
		checkHistogram(t, xs, maxBins, Histogram(xs, maxBins))
	})
}

func FuzzStats(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add(s, 50.0, 0.05)
	}
	f.Add(bytesOf(1, 2, 3), math.NaN(), math.Inf(1))
	f.Add(bytesOf(1, 2, 3), -1.0, -1.0)
	f.Fuzz(func(t *testing.T, b []byte, p, frac float64) {
		xs := floatsOf(b)
		st := Summarize(xs)
		s := finiteSorted(xs)
		if st.N != len(s) {
			t.Fatalf("N %d, want %d", st.N, len(s))
		}
		v := Percentile(s, p)
		if len(s) > 0 && (v < s[0] || v > s[len(s)-1]) {
			t.Fatalf("Percentile(%v) = %g outside [%g, %g]", p, v, s[0], s[len(s)-1])
		}
		if len(s) > 0 && (st.P50 < st.Min || st.P50 > st.Max || st.Mean < st.Min || st.Mean > st.Max) {
			t.Fatalf("stats out of range: %+v", st)
		}
		_ = TrimmedMean(xs, frac)
		_ = TrimmedMeanTop(xs, frac)
		_ = mean(xs)
		_ = IdleRPM(xs)
	})
}

func FuzzJitter(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add(s, s)
	}
	f.Add(bytesOf(0, 1, 2), bytesOf(5, math.NaN(), 7.5))
	f.Fuzz(func(t *testing.T, sb, rb []byte) {
		send, recv := floatsOf(sb), floatsOf(rb)
		// Inf or NaN can come from differences that overflow; a negative
		// jitter cannot.
		if j := Jitter3550(send, recv); j < 0 {
			t.Fatalf("Jitter3550 = %g", j)
		}
		if n := len(IPDV(recv)); n > max(len(recv)-1, 0) {
			t.Fatalf("IPDV: %d values from %d", n, len(recv))
		}
		if n := len(PDV(recv)); n > len(recv) {
			t.Fatalf("PDV: %d values from %d", n, len(recv))
		}
		if len(Abs(recv)) != len(recv) {
			t.Fatal("Abs changed the length")
		}
	})
}

func FuzzLossPatterns(f *testing.F) {
	f.Add([]byte{}, 1)
	f.Add([]byte{1}, 0)
	f.Add([]byte{1, 1, 1, 1}, 3)
	f.Add([]byte{0, 1, 0, 0, 1, 1, 0, 1}, -5)
	f.Add([]byte{0, 0, 0}, 1<<40)
	f.Fuzz(func(t *testing.T, b []byte, delta int) {
		lost := make([]bool, len(b))
		n := 0
		for i, x := range b {
			lost[i] = x&1 == 1
			if lost[i] {
				n++
			}
		}
		if d := LossDistances(lost); len(d) != len(lost) {
			t.Fatalf("LossDistances: %d of %d", len(d), len(lost))
		}
		if p := LossPeriods(lost); len(p) != len(lost) {
			t.Fatalf("LossPeriods: %d of %d", len(p), len(lost))
		}
		lp := LossPatternOf(lost, delta)
		if lp.Lost != n || lp.Packets != len(lost) || lp.NoticeableLossRate < 0 || lp.NoticeableLossRate > 1 {
			t.Fatalf("LossPatternOf: %+v for %d lost of %d", lp, n, len(lost))
		}
		seqs := make([]uint64, 0, len(b)/2)
		for i := 0; i+1 < len(b); i += 2 {
			seqs = append(seqs, uint64(b[i])<<8|uint64(b[i+1]))
		}
		if len(b) > 0 && b[0] == 0xff {
			seqs = append(seqs, math.MaxUint64, 0, math.MaxUint64-1)
		}
		r, dups := ReorderingOf(seqs)
		if r.Received+dups != len(seqs) || r.Reordered > r.Received {
			t.Fatalf("ReorderingOf: %+v, %d duplicates of %d", r, dups, len(seqs))
		}
	})
}

func FuzzSeries(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add(s, 0.05, 0.0, 1.0)
	}
	f.Add(bytesOf(0, 100, 1, 200, 2, 300), 0.0, math.NaN(), math.Inf(1))
	f.Add(bytesOf(0, 100, 1e15, 200), 1e-9, -1.0, 1e16)
	f.Add(bytesOf(-math.MaxFloat64, 0, math.MaxFloat64, 1), 1e-300, 0.0, 0.0)
	f.Fuzz(func(t *testing.T, b []byte, step, t0, t1 float64) {
		xs := floatsOf(b)
		var c []ByteCount
		for i := 0; i+1 < len(xs); i += 2 {
			c = append(c, ByteCount{TS: xs[i], Bytes: int64(math.Float64bits(xs[i+1]) >> 2)})
		}
		if r := Rates(c); len(r) > max(len(c)-1, 0) {
			t.Fatalf("Rates: %d points from %d", len(r), len(c))
		}
		_ = BytesBetween(c, t0, t1)
		_ = ValueAt(c, t0)
		half := len(c) / 2
		if s := SumCounts([][]ByteCount{c[:half], c[half:]}, step); len(s) > MaxSeriesPoints+1 {
			t.Fatalf("SumCounts: %d points", len(s))
		}
		if s := Resample(c, step); len(s) > max(MaxSeriesPoints+1, len(c)) {
			t.Fatalf("Resample: %d points", len(s))
		}
	})
}

func FuzzEstimateOffset(f *testing.F) {
	for _, s := range sampleSeeds() {
		f.Add(s, 1.0)
	}
	f.Add(bytesOf(0, 1, 1.001, 0.002, 1, 2, 2.001, 1.002), 0.0)
	f.Add(bytesOf(0, 1, 1.001, 0.002, 1, 2, 2.001, 1.002), math.NaN())
	f.Fuzz(func(t *testing.T, b []byte, window float64) {
		xs := floatsOf(b)
		var ps []Probe
		for i := 0; i+3 < len(xs); i += 4 {
			ps = append(ps, Probe{xs[i], xs[i+1], xs[i+2], xs[i+3]})
		}
		o, ok := EstimateOffset(ps, window)
		if ok && (o.Samples < 1 || o.Samples > len(ps)) {
			t.Fatalf("EstimateOffset used %d of %d probes", o.Samples, len(ps))
		}
	})
}

func FuzzWarmup(f *testing.F) {
	f.Add(bytesOf(0, 10, 1e6, 0.1, 20, 2e6, 0.2, 20, 2e6))
	f.Add(bytesOf(math.NaN(), math.Inf(1), -1))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		xs := floatsOf(b)
		var series []model.TCPSample
		for i := 0; i+2 < len(xs); i += 3 {
			series = append(series, model.TCPSample{TS: xs[i], SndCwnd: uint32(math.Float64bits(xs[i+1])), DeliveryRateBps: xs[i+2]})
		}
		slices.SortStableFunc(series, func(a, b model.TCPSample) int { return cmpFloat(a.TS, b.TS) })
		_, _, _ = Warmup(series)
	})
}
