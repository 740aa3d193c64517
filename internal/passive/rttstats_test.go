package passive

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sonde-project/sonde/internal/metrics"
)

func TestHistBuckets(t *testing.T) {
	last := -1
	for v := int64(1); v < 1<<40; v += v/97 + 1 {
		i := histBucket(v)
		if i < last {
			t.Fatalf("bucket of %d is %d, below %d", v, i, last)
		}
		last = i
		if v >= 1<<histMinExp && v < 1<<(histMinExp+histOctaves) {
			if m := histValue(i); math.Abs(m/float64(v)-1) > 1.0/histSub {
				t.Fatalf("value %d in bucket %d whose middle is %.0f", v, i, m)
			}
		}
	}
}

// The sketch's summary equals the exact one for short flows and stays
// within the bucket width for long ones; memory does not grow with n.
func TestRTTStatsQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 10, exactMax, exactMax + 1, 10000, 200000} {
		var st rttStats
		ms := make([]float64, 0, n)
		var sum float64
		for range n {
			v := int64(20e6 + rng.NormFloat64()*3e6 + rng.ExpFloat64()*5e6)
			v = max(v, 1)
			st.add(v, true)
			ms = append(ms, float64(v)/1e6)
			sum += float64(v) / 1e6
		}
		st.add(5, false)
		slices.Sort(ms)
		r := st.summary()
		if r.Samples != n || r.Rejected != 1 || r.MinMs != ms[0] || r.MaxMs != ms[n-1] || math.Abs(r.MeanMs-sum/float64(n)) > 1e-6 {
			t.Fatalf("n=%d: %+v", n, r)
		}
		tol := 0.0
		if n > exactMax {
			tol = 1.0 / histSub // bucket width; the ranks match
		}
		for _, q := range []struct {
			got float64
			p   float64
		}{{r.MedianMs, 50}, {r.P90Ms, 90}} {
			want := metrics.Percentile(ms, q.p)
			if math.Abs(q.got/want-1) > tol+1e-9 && n > 2 {
				t.Errorf("n=%d p%.0f: %.4f, exact %.4f", n, q.p, q.got, want)
			}
		}
		if n > exactMax && (st.exact != nil || st.counts == nil || cap(st.pend) > foldBatch) {
			t.Errorf("n=%d: %d values kept exactly, %d buckets pending", n, cap(st.exact), cap(st.pend))
		}
	}
}

// The sparse histogram counts each value once in its bucket, keeps its
// buckets ascending and distinct, and holds only the buckets reached.
func TestRTTStatsSparse(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var st rttStats
	var buckets []int
	for i := range 5000 {
		v := int64(1e5 + rng.ExpFloat64()*1e9)
		switch i % 3 {
		case 0:
			v = int64(1e5 + rng.Float64()*1e6) // the low end too
		case 1:
			v = int64(rng.IntN(3000)) // below the first bucket
		}
		st.add(v, true)
		buckets = append(buckets, histBucket(v))
	}
	st.fold()
	want := make([]uint32, histBuckets)
	for _, b := range buckets {
		want[b]++
	}
	got := make([]uint32, histBuckets)
	last, kept := -1, 0
	st.each(func(b int, n uint32) bool {
		if b <= last {
			t.Fatalf("buckets not ascending: %d then %d", last, b)
		}
		if n == 0 {
			t.Fatalf("bucket %d kept with no count", b)
		}
		got[b], last = n, b
		kept++
		return true
	})
	if kept != len(st.counts) {
		t.Fatalf("%d buckets in the bitmaps, %d counts", kept, len(st.counts))
	}
	for b, n := range want {
		if got[b] != n {
			t.Fatalf("bucket %d: %d values, counted %d", b, n, got[b])
		}
	}
}

// A pure ACK that closes an application's turn must not start a TS sample:
// its TSval is echoed only by the peer's next answer, a think time later.
// Request/response exchanges and server pushes with 20 ms RTT and 500 ms
// think times must give only samples near 20 ms.
func TestPureACKClosingATurnStartsNoSample(t *testing.T) {
	a := New(Config{Interface: -1})
	const rtt, think = int64(20e6), int64(500e6)
	cs, ss := uint32(1000), uint32(5000)
	at := int64(1e9)
	ts := func(t int64) uint32 { return uint32(t / 1e6) }
	send := func(up bool, seq, ack uint32, flags uint8, tsval, tsecr uint32, n int) {
		src, dst, sp, dp := clientIP, serverIP, uint16(40000), uint16(80)
		if !up {
			src, dst, sp, dp = serverIP, clientIP, 80, 40000
		}
		a.Packet(at, ipHeader(src, dst, 6, 1, tcpSeg(sp, dp, seq, ack, flags, tsval, tsecr, n)))
	}
	// Observer at the client: the server's answers come one RTT later.
	send(true, cs, 0, flagSYN, ts(at), 0, 0)
	cTS := ts(at)
	at += rtt
	send(false, ss, cs+1, flagSYN|flagACK, ts(at), cTS, 0)
	sTS := ts(at)
	cs++
	ss++
	for range 5 {
		send(true, cs, ss, flagACK|flagPSH, ts(at), sTS, 100) // request
		cTS = ts(at)
		at += rtt
		send(false, ss, cs+100, flagACK|flagPSH, ts(at), cTS, 300) // response
		sTS = ts(at)
		cs += 100
		ss += 300
		at += 50e3
		send(true, cs, ss, flagACK, ts(at), sTS, 0) // the client's last ACK
		cTS = ts(at)
		at += think
		// The server speaks next (a push): it echoes the ACK's TSval.
		send(false, ss, cs, flagACK|flagPSH, ts(at), cTS, 200)
		sTS = ts(at)
		ss += 200
		at += 50e3
		send(true, cs, ss, flagACK, ts(at), sTS, 0)
		cTS = ts(at)
		at += think
	}
	r := a.Finish(nil)
	if len(r.TCP) != 1 {
		t.Fatalf("%d connections", len(r.TCP))
	}
	b := r.TCP[0].TSSideB
	if b.Samples < 5 || b.MaxMs > 21 {
		t.Fatalf("server-side TS samples %+v: want ≥ 5, all near 20 ms (none spanning the think time)", b)
	}
}
