package stamp

import (
	"net/netip"
	"testing"
	"time"
)

// TestRateLimitOnArrival: a backlog of probes that arrived at a steady
// 50/s but are read at once (a reflector starved of CPU for 2 s) is not
// rate-limited: the bucket is judged on the kernel's arrival times. Judged
// on the read time, all but the burst would be dropped.
func TestRateLimitOnArrival(t *testing.T) {
	const n, gap = 100, 20 * time.Millisecond
	spec := SessionSpec{Client: netip.MustParseAddr("198.18.0.1"), RatePPS: 65, Burst: 20,
		MaxPackets: n, Expires: time.Now().Add(time.Hour)}
	s := &Session{spec: spec, tokens: float64(spec.Burst), rep: SessionReport{Bitmap: make([]byte, n/8+1), TOS: map[int]int{}}}
	read := time.Now() // every probe read at this instant
	start := read.Add(-n * gap)
	for i := range n {
		info := RecvInfo{At: read, KernelNs: start.Add(time.Duration(i) * gap).UnixNano()}
		if _, ok := s.admit(uint32(i), -1, arrival(info)); !ok {
			t.Fatalf("probe %d of a steady 50/s dropped: %+v", i, s.report())
		}
	}
	// The same backlog without kernel times is judged at the read time.
	s2 := &Session{spec: spec, tokens: float64(spec.Burst), rep: SessionReport{Bitmap: make([]byte, n/8+1), TOS: map[int]int{}}}
	for i := range n {
		s2.admit(uint32(i), -1, arrival(RecvInfo{At: read}))
	}
	if got := s2.report().RateLimited; got != n-spec.Burst {
		t.Fatalf("read-time judging: %d rate-limited, want %d", got, n-spec.Burst)
	}
}

// TestArrivalBounds: a lag that is negative or implausibly long (clocks
// that disagree) falls back to the read time.
func TestArrivalBounds(t *testing.T) {
	at := time.Now()
	for _, k := range []int64{0, at.Add(time.Second).UnixNano(), at.Add(-time.Hour).UnixNano()} {
		if got := arrival(RecvInfo{At: at, KernelNs: k}); !got.Equal(at) {
			t.Errorf("kernel ns %d: arrival %v, want the read time", k, got)
		}
	}
	if got := arrival(RecvInfo{At: at, KernelNs: at.Add(-time.Second).UnixNano()}); at.Sub(got) != time.Second {
		t.Errorf("1 s in the queue: arrival %v before the read, want 1 s", at.Sub(got))
	}
}
