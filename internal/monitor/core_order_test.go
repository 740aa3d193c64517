package monitor

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// drainOrder makes samples as the ring gives them: streams interleaved in
// send order, lost ones emitted a timeout late (so out of order), and
// sometimes a sample of a stream that is not configured.
func drainOrder(rng *rand.Rand, n, streams int, stray bool) []winSample {
	var out, lost []winSample
	for i := range n {
		sent := t0 + int64(i/streams)*100e6
		s := winSample{Stream: int32(i % streams), SentNs: sent, RTTNs: 20e6 + int64(i)}
		if stray && rng.IntN(200) == 0 {
			s.Stream = int32(streams + rng.IntN(3))
		}
		if rng.IntN(4) == 0 {
			s.Lost, s.RTTNs = true, -1
			lost = append(lost, s)
		} else {
			out = append(out, s)
		}
		for len(lost) > 0 && lost[0].SentNs+2e9 <= sent {
			out = append(out, lost[0])
			lost = lost[1:]
		}
	}
	return append(out, lost...)
}

// TestFinalOrderSameAsStableSort: the linear ordering gives exactly what
// the stable sort of the filtered window gives.
func TestFinalOrderSameAsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 40 {
		streams := 1 + rng.IntN(8)
		recent := drainOrder(rng, rng.IntN(5000), streams, trial%4 == 3)
		to := t0 + rng.Int64N(int64(len(recent)/streams+1)*100e6+1)
		var want []model.ProbeSample
		for _, s := range recent {
			if s.SentNs < to {
				want = append(want, s.sample())
			}
		}
		slices.SortStableFunc(want, byStreamSent)
		var got []model.ProbeSample
		win := windowOf(recent)
		for _, i := range finalOrder(nil, win, to, streams) {
			got = append(got, win.At(int(i)).sample())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d streams, %d samples): orders differ", trial, streams, len(recent))
		}
	}
}

// windowOf is ss in a window of their number.
func windowOf(ss []winSample) *window {
	w := newWindow(len(ss))
	for _, s := range ss {
		w.Push(s)
	}
	return w
}

// samplesOf is w's samples, oldest first.
func samplesOf(w *window) []winSample {
	out := make([]winSample, 0, w.Len())
	for i := range w.Len() {
		out = append(out, w.At(i))
	}
	return out
}

// TestRecentWindowRing: the window the ring and trimRecent keep is the
// one a plain append and copy would keep (late, lost and big RTTs
// included), in the ring sized once for the plan.
func TestRecentWindowRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c := &core{recent: newWindow(windowCap(8, 10, 2*time.Second))}
	size := c.recent.Cap()
	var naive []winSample
	for sec := int64(1); sec <= 3000; sec++ {
		now := t0 + sec*1e9
		for i := range 80 {
			s := winSample{Stream: int32(i % 8), SentNs: now - 1e9 + int64(i/8)*100e6, RTTNs: rng.Int64N(5e9), Load: model.LoadState(rng.IntN(6))}
			switch rng.IntN(20) {
			case 0:
				s.Lost, s.RTTNs = true, -1
			case 1:
				s.Lost, s.Late, s.RTTNs = true, true, 5e9+rng.Int64N(200e9)
			}
			c.recent.Push(s)
			naive = append(naive, s)
		}
		if sec%7 == 0 {
			// A late reply replaces its lost sample in place.
			i := rng.IntN(len(naive))
			naive[i].RTTNs, naive[i].Late = rng.Int64N(240e9), true
			c.recent.Set(i, naive[i])
		}
		c.trimRecent(now)
		from := now - int64(recentSpan)
		for len(naive) > 0 && naive[0].SentNs < from {
			naive = naive[1:]
		}
		if got := samplesOf(c.recent); !slices.Equal(got, naive) {
			t.Fatalf("second %d: window of %d samples, want %d", sec, len(got), len(naive))
		}
		if c.recent.Cap() != size || len(c.recent.big) > c.recent.Len() {
			t.Fatalf("second %d: ring of %d (sized %d), %d big RTTs for %d samples", sec, c.recent.Cap(), size, len(c.recent.big), c.recent.Len())
		}
	}
}
