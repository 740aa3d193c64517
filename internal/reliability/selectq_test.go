package reliability

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOrderForQuantiles checks the quickselect against a full sort: the
// same value at every rank exactStats reads, for sizes around the
// small-slice cut-off, runs of equal values, sorted and reversed input.
func TestOrderForQuantiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func(i, n int) int64{
		"random":   func(int, int) int64 { return r.Int64N(1e9) },
		"few":      func(int, int) int64 { return r.Int64N(4) }, // mostly duplicates
		"sorted":   func(i, _ int) int64 { return int64(i) },
		"reversed": func(i, n int) int64 { return int64(n - i) },
		"sawtooth": func(i, _ int) int64 { return int64(i % 97) },
		"equal":    func(int, int) int64 { return 7 },
	}
	for name, gen := range gens {
		for _, n := range []int{1, 2, 3, 15, 16, 17, 100, 1000, 6000, 100_003} {
			vs := make([]int64, n)
			for i := range vs {
				vs[i] = gen(i, n)
			}
			want := slices.Sorted(slices.Values(vs))
			orderForQuantiles(vs)
			for _, p := range exactQuantiles {
				k := nearestRankIndex(n, p)
				if vs[k] != want[k] {
					t.Fatalf("%s n=%d p=%g: rank %d holds %d, sorted %d", name, n, p, k, vs[k], want[k])
				}
			}
			got := slices.Sorted(slices.Values(vs))
			if !slices.Equal(got, want) {
				t.Fatalf("%s n=%d: values lost or duplicated", name, n)
			}
		}
	}
}

// BenchmarkExactQuantiles compares the quickselect with the full sort it
// replaces on a detector window's RTTs (its 15 min at 100 probes/s).
func BenchmarkExactQuantiles(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]int64, 90_000)
	for i := range src {
		src[i] = 19_000_000 + r.Int64N(3_000_000)
	}
	vs := make([]int64, len(src))
	b.Run("select", func(b *testing.B) {
		for b.Loop() {
			copy(vs, src)
			orderForQuantiles(vs)
		}
	})
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			copy(vs, src)
			slices.Sort(vs)
		}
	})
}

// FuzzOrderForQuantiles checks the quickselect against the sort on any
// values (8 bytes each).
func FuzzOrderForQuantiles(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("0123456789abcdef0123456789abcdef01234567"))
	f.Add(make([]byte, 8*40))
	f.Fuzz(func(t *testing.T, b []byte) {
		vs := make([]int64, len(b)/8)
		for i := range vs {
			vs[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
		want := slices.Sorted(slices.Values(vs))
		orderForQuantiles(vs)
		for _, p := range exactQuantiles {
			if k := nearestRankIndex(len(vs), p); len(vs) > 0 && vs[k] != want[k] {
				t.Fatalf("n=%d p=%g: rank %d holds %d, sorted %d", len(vs), p, k, vs[k], want[k])
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(vs)), want) {
			t.Fatal("values lost or duplicated")
		}
	})
}
