package metrics

import (
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// slowStart is a sender in slow start sampled every 10 ms with a 19 ms RTT
// (so that 3 RTTs, 57 ms, fall between samples): ssthresh infinite,
// ca_state Open, cwnd and delivery rate doubling every two samples. No rule
// may fire on it.
func slowStart(n int) []model.TCPSample {
	out := make([]model.TCPSample, n)
	for i := range out {
		out[i] = model.TCPSample{
			TS:              float64(i) / 100,
			RTTUs:           19000,
			SndSsthresh:     InfiniteSsthresh,
			SndCwnd:         10 << (i / 2),
			DeliveryRateBps: float64(int64(1e6) << (i / 2)),
		}
	}
	return out
}

func TestWarmup(t *testing.T) {
	tests := []struct {
		name   string
		series func() []model.TCPSample
		ts     float64
		how    string
		ok     bool
	}{
		{"empty", func() []model.TCPSample { return nil }, 0, "", false},
		{"still in slow start", func() []model.TCPSample { return slowStart(20) }, 0, "", false},
		{"ssthresh set at 50 ms", func() []model.TCPSample {
			s := slowStart(20)
			for i := 5; i < len(s); i++ {
				s[i].SndSsthresh = 40
			}
			return s
		}, 0.05, WarmupSsthresh, true},
		{"ssthresh 0 is unset", func() []model.TCPSample {
			s := slowStart(20)
			for i := range s {
				s[i].SndSsthresh = 0
			}
			return s
		}, 0, "", false},
		// A cached ssthresh is set from the first sample; slow start ends
		// when cwnd reaches it (cwnd 10<<(i/2) ≥ 100 first at i = 8).
		{"cached ssthresh reached", func() []model.TCPSample {
			s := slowStart(20)
			for i := range s {
				s[i].SndSsthresh = 100
			}
			return s
		}, 0.08, WarmupSsthresh, true},
		// Disorder (1) does not end slow start; CWR (2) does.
		{"ca_state CWR at 70 ms", func() []model.TCPSample {
			s := slowStart(20)
			s[3].CAState = 1
			s[7].CAState = 2
			return s
		}, 0.07, WarmupCAState, true},
		{"ca_state Loss", func() []model.TCPSample {
			s := slowStart(20)
			s[12].CAState = 4
			return s
		}, 0.12, WarmupCAState, true},
		// Both rules on one sample: ssthresh is listed first.
		{"tie prefers ssthresh", func() []model.TCPSample {
			s := slowStart(20)
			s[6].CAState = 3
			for i := 6; i < len(s); i++ {
				s[i].SndSsthresh = 30
			}
			return s
		}, 0.06, WarmupSsthresh, true},
		// BBR-like: ssthresh never set, rate 10, 20, 40, 80 Mbit/s, then
		// 100 ± 2%. The window at sample i reaches back to the latest
		// sample at or before TS − 57 ms, i.e. sample i−6; samples 4..10
		// are the first such window entirely on the plateau.
		{"delivery rate plateau", func() []model.TCPSample {
			s := slowStart(16)
			rates := []float64{10, 20, 40, 80, 100, 101, 99, 100, 102, 100, 98, 100, 101, 99, 100, 100}
			for i := range s {
				s[i].DeliveryRateBps = rates[i] * 1e6
			}
			return s
		}, 0.10, WarmupDeliveryRate, true},
		// A 6% swing inside the window keeps it from being stable.
		{"delivery rate 6% off", func() []model.TCPSample {
			s := slowStart(12)
			for i := range s {
				s[i].DeliveryRateBps = 100e6
				if i%2 == 1 {
					s[i].DeliveryRateBps = 112e6
				}
			}
			return s
		}, 0, "", false},
		// Loopback: RTT 50 µs, samples 10 ms apart. Three RTTs hold one
		// sample, so the window is the last three samples.
		{"delivery rate, RTT below sampling", func() []model.TCPSample {
			s := slowStart(10)
			rates := []float64{1, 4, 16, 64, 100, 100, 100, 100, 100, 100}
			for i := range s {
				s[i].RTTUs = 50
				s[i].DeliveryRateBps = rates[i] * 1e6
			}
			return s
		}, 0.06, WarmupDeliveryRate, true},
		// Without an RTT estimate there is no window to judge.
		{"no RTT", func() []model.TCPSample {
			s := slowStart(10)
			for i := range s {
				s[i].RTTUs = 0
				s[i].DeliveryRateBps = 1e8
			}
			return s
		}, 0, "", false},
		// A series shorter than three RTTs cannot show stability.
		{"too short for 3 RTTs", func() []model.TCPSample {
			s := slowStart(6)
			for i := range s {
				s[i].DeliveryRateBps = 1e8
			}
			return s
		}, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, how, ok := Warmup(tt.series())
			if ts != tt.ts || how != tt.how || ok != tt.ok {
				t.Errorf("Warmup = %g, %q, %v; want %g, %q, %v", ts, how, ok, tt.ts, tt.how, tt.ok)
			}
		})
	}
}
