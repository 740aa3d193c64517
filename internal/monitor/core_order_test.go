package monitor

import (
	"math/rand/v2"
	"slices"
	"testing"

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
		for _, i := range finalOrder(nil, recent, to, streams) {
			got = append(got, recent[i].sample())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d streams, %d samples): orders differ", trial, streams, len(recent))
		}
	}
}

// TestRecentWindowAmortised: the window pushRecent and trimRecent keep is
// the one a plain append and copy would keep, and its backing array stays
// within twice the window.
func TestRecentWindowAmortised(t *testing.T) {
	c := &core{}
	var naive []winSample
	for sec := int64(1); sec <= 3000; sec++ {
		now := t0 + sec*1e9
		for i := range 80 {
			s := winSample{Stream: int32(i % 8), SentNs: now - 1e9 + int64(i/8)*100e6}
			c.pushRecent(s)
			naive = append(naive, s)
		}
		c.trimRecent(now)
		from := now - int64(recentSpan)
		for len(naive) > 0 && naive[0].SentNs < from {
			naive = naive[1:]
		}
		if !slices.Equal(c.recent, naive) {
			t.Fatalf("second %d: window of %d samples, want %d", sec, len(c.recent), len(naive))
		}
		if cap(c.recentArr) > 2*len(naive)+2048 && sec > int64(recentSpan.Seconds())+60 {
			t.Fatalf("second %d: backing array of %d for a window of %d", sec, cap(c.recentArr), len(naive))
		}
	}
}
