package emulator

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/checksum"
)

func TestRateAndDelayExact(t *testing.T) {
	// 1000-byte packets at 8 Mbit/s take exactly 1 ms each.
	s := newSim(t, Params{RateBps: 8e6, Delay: 10 * time.Millisecond}, nil, 1)
	for i := 0; i < 50; i++ {
		s.send(0, ipv4UDP(1000, 1, 0, uint16(i)))
	}
	s.drain()
	if len(s.out) != 50 {
		t.Fatalf("delivered %d, want 50", len(s.out))
	}
	for i, p := range s.out {
		want := time.Duration(i+1)*time.Millisecond + 10*time.Millisecond
		if p.Due != want || p.Dequeue != time.Duration(i)*time.Millisecond {
			t.Fatalf("packet %d: dequeue %v due %v, want %v / %v", i, p.Dequeue, p.Due, time.Duration(i)*time.Millisecond, want)
		}
	}
}

func TestUnlimitedRateIsDelayOnly(t *testing.T) {
	s := newSim(t, Params{Delay: 25 * time.Millisecond}, nil, 1)
	for i := 0; i < 10; i++ {
		s.send(time.Duration(i)*time.Microsecond, ipv4UDP(1500, 1, 0, 0))
	}
	s.drain()
	for _, p := range s.out {
		if d := p.Sent - p.Arrival; d != 25*time.Millisecond {
			t.Fatalf("delay %v, want 25ms", d)
		}
	}
}

func TestDropTailQueueDelayIsBOverC(t *testing.T) {
	// B = 30000 bytes at C = 1 Mbit/s: a full buffer adds 240 ms.
	const B, C = 30000, 1e6
	s := newSim(t, Params{RateBps: C, LimitBytes: B}, nil, 1)
	s.cbr(0, 3*time.Second, 1000, 2*C, 1)
	s.drain()
	var soj []float64
	for _, p := range s.out {
		if p.Arrival > time.Second {
			soj = append(soj, (p.Dequeue - p.Arrival).Seconds())
		}
	}
	want := B * 8 / C
	if got := quantile(soj, 0.5); math.Abs(got-want)/want > 0.05 {
		t.Fatalf("median sojourn %.4f s, want %.4f ±5%%", got, want)
	}
	// Everything beyond what the link serves in 3 s plus what the full
	// buffer holds is tail-dropped: 750 − 375 − 30.
	if c := s.l.Counters(); c.DropQueue < 344 || c.DropQueue > 346 {
		t.Fatalf("drop-tail dropped %d of %d, want 345", c.DropQueue, c.Arrived)
	}
	for _, p := range s.dropped {
		if p.Fate != DropQueue {
			t.Fatalf("unexpected fate %v", p.Fate)
		}
	}
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestQueueLimitPackets(t *testing.T) {
	s := newSim(t, Params{RateBps: 1e6, LimitPackets: 10}, nil, 1)
	for i := 0; i < 30; i++ {
		s.send(0, ipv4UDP(500, 1, 0, 0))
	}
	s.drain()
	// One packet goes straight onto the wire, ten wait.
	if len(s.out) != 11 || len(s.dropped) != 19 {
		t.Fatalf("delivered %d dropped %d, want 11 and 19", len(s.out), len(s.dropped))
	}
}

func TestCoDelHoldsSojournNearTarget(t *testing.T) {
	// A Reno-like saturating flow (20 ms RTT): drop-tail lets it fill the
	// 1000-packet buffer, CoDel keeps the sojourn near 5 ms.
	run := func(q Qdisc) (median float64, drops uint64) {
		s := newSim(t, Params{RateBps: 10e6, Qdisc: q}, nil, 1)
		s.reno(20*time.Second, 1250, 20*time.Millisecond)
		s.drain()
		var soj []float64
		for _, p := range s.out {
			if p.Arrival > 10*time.Second {
				soj = append(soj, (p.Dequeue-p.Arrival).Seconds()*1000)
			}
		}
		c := s.l.Counters()
		return quantile(soj, 0.5), c.DropAQM + c.DropQueue
	}
	codelMed, codelDrops := run(CoDel)
	dtMed, _ := run(DropTail)
	t.Logf("median sojourn: codel %.2f ms (%d drops), drop-tail %.2f ms", codelMed, codelDrops, dtMed)
	if codelMed < 1 || codelMed > 10 {
		t.Errorf("codel median sojourn %.2f ms, want near 5 ms", codelMed)
	}
	if dtMed < 300 {
		t.Errorf("drop-tail median sojourn %.2f ms, want hundreds of ms (1000-packet buffer = 1 s)", dtMed)
	}
}

func TestCoDelControlLaw(t *testing.T) {
	// A standing queue: the first drop comes one interval after the sojourn
	// first exceeds target, the next ones at interval/√count.
	s := newSim(t, Params{RateBps: 10e6, Qdisc: CoDel}, nil, 1)
	s.cbr(0, 2*time.Second, 1250, 20e6, 1)
	s.drain()
	var times []time.Duration
	for _, p := range s.dropped {
		if p.Fate == DropAQM {
			times = append(times, p.Dequeue)
		}
	}
	if len(times) < 5 {
		t.Fatalf("only %d codel drops", len(times))
	}
	// sojourn passes 5 ms after ~10 ms of 2× overload (5 ms of backlog at
	// 1 ms per packet): first drop near 10 + 100 ms.
	if times[0] < 100*time.Millisecond || times[0] > 120*time.Millisecond {
		t.Errorf("first drop at %v, want ≈ 110 ms", times[0])
	}
	for i := 1; i < 5; i++ {
		gap := times[i] - times[i-1]
		want := time.Duration(float64(100*time.Millisecond) / math.Sqrt(float64(i)))
		if d := gap - want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("drop gap %d = %v, want %v ± 1 ms (one packet time)", i, gap, want)
		}
	}
}

func TestCoDelECNMarksInsteadOfDropping(t *testing.T) {
	s := newSim(t, Params{RateBps: 10e6, Qdisc: CoDel, ECN: true}, nil, 1)
	gap := time.Duration(666667)
	for tm := time.Duration(0); tm < 3*time.Second; tm += gap {
		s.send(tm, ipv4UDP(1250, 1, 2 /* ECT(0) */, 0))
	}
	s.drain()
	c := s.l.Counters()
	if c.Marked == 0 || c.DropAQM != 0 {
		t.Fatalf("marked %d, aqm drops %d: want marks and no AQM drops", c.Marked, c.DropAQM)
	}
	for _, p := range s.out {
		if p.Flags&FlagMarked != 0 {
			if ecnBits(p.Data) != 3 || checksum.Checksum(p.Data[:20], 0) != 0 {
				t.Fatalf("marked packet: ecn %d, header checksum invalid", ecnBits(p.Data))
			}
		}
	}
}

func TestPIEControlsDelay(t *testing.T) {
	s := newSim(t, Params{RateBps: 10e6, Qdisc: PIE}, nil, 7)
	s.cbr(0, 30*time.Second, 1250, 20e6, 1)
	s.drain()
	var soj []float64
	for _, p := range s.out {
		if p.Arrival > 15*time.Second {
			soj = append(soj, (p.Dequeue-p.Arrival).Seconds()*1000)
		}
	}
	med := quantile(soj, 0.5)
	c := s.l.Counters()
	t.Logf("pie: median sojourn %.2f ms, aqm drops %d of %d", med, c.DropAQM, c.Arrived)
	if med < 5 || med > 40 {
		t.Errorf("pie median sojourn %.2f ms, want near the 15 ms target", med)
	}
	if c.DropQueue != 0 {
		t.Errorf("pie hit the queue limit %d times", c.DropQueue)
	}
	if r := float64(c.DropAQM) / float64(c.Arrived); math.Abs(r-0.5) > 0.05 {
		t.Errorf("pie drop ratio %.3f, want ≈ 0.5 for 2× overload", r)
	}
}

func TestFQCoDelIsolatesSparseFlow(t *testing.T) {
	s := newSim(t, Params{RateBps: 10e6, Qdisc: FQCoDel}, nil, 3)
	// Heavy flow at 2× the rate, plus a sparse flow of 100-byte packets
	// every 10 ms, interleaved by time.
	heavyGap := time.Duration(1250 * 8 / 20e6 * 1e9)
	nextSparse := time.Duration(0)
	for tm := time.Duration(0); tm < 5*time.Second; tm += heavyGap {
		for nextSparse <= tm {
			s.send(nextSparse, ipv4UDP(100, 2, 0, 0))
			nextSparse += 10 * time.Millisecond
		}
		s.send(tm, ipv4UDP(1250, 1, 0, 0))
	}
	s.drain()
	var sparse, heavy []float64
	for _, p := range s.out {
		if p.Arrival < time.Second {
			continue
		}
		d := (p.Dequeue - p.Arrival).Seconds() * 1000
		if len(p.Data) == 100 {
			sparse = append(sparse, d)
		} else {
			heavy = append(heavy, d)
		}
	}
	t.Logf("fq_codel: sparse p99 %.2f ms, heavy median %.2f ms", quantile(sparse, 0.99), quantile(heavy, 0.5))
	if quantile(sparse, 0.99) > 1.1 {
		t.Errorf("sparse flow p99 sojourn %.2f ms, want < one heavy packet time", quantile(sparse, 0.99))
	}
	if len(sparse) < 390 {
		t.Errorf("sparse flow lost packets: %d delivered", len(sparse))
	}
}

func TestFQCoDelFairShare(t *testing.T) {
	s := newSim(t, Params{RateBps: 10e6, Qdisc: FQCoDel}, nil, 3)
	// Two flows, one at 3× the other's packet size, both oversubscribing.
	gapA := time.Duration(1500 * 8 / 10e6 * 1e9)
	gapB := time.Duration(500 * 8 / 10e6 * 1e9)
	ta, tb := time.Duration(0), time.Duration(0)
	for ta < 4*time.Second || tb < 4*time.Second {
		if ta <= tb {
			s.send(ta, ipv4UDP(1500, 1, 0, 0))
			ta += gapA
		} else {
			s.send(tb, ipv4UDP(500, 2, 0, 0))
			tb += gapB
		}
	}
	s.drain()
	var a, b float64
	for _, p := range s.out {
		if p.Dequeue > time.Second && p.Dequeue < 4*time.Second {
			if len(p.Data) == 1500 {
				a += 1500
			} else {
				b += 500
			}
		}
	}
	if r := a / b; r < 0.95 || r > 1.05 {
		t.Errorf("byte share ratio %.3f, want 1 ± 5%% (DRR)", r)
	}
}

func TestBernoulliLossWithinBinomialInterval(t *testing.T) {
	s := newSim(t, Params{Loss: 0.04}, nil, 11)
	const n = 20000
	for i := 0; i < n; i++ {
		s.send(time.Duration(i)*time.Millisecond, ipv4UDP(100, 1, 0, 0))
	}
	s.drain()
	if k := int(s.l.Counters().DropLoss); !binomialOK(k, n, 0.04) {
		t.Fatalf("lost %d of %d, outside the 99%% interval of p = 0.04", k, n)
	}
}

func TestGilbertElliott(t *testing.T) {
	ge := &GilbertElliott{P: 0.01, R: 0.25, K: 1, H: 0}
	s := newSim(t, Params{GE: ge}, nil, 5)
	const n = 200000
	lost := make([]bool, n)
	for i := 0; i < n; i++ {
		p := s.send(time.Duration(i)*time.Microsecond, ipv4UDP(100, 1, 0, 0))
		lost[i] = p.Fate == DropLoss
	}
	var k, bursts int
	for i, l := range lost {
		if l {
			k++
			if i == 0 || !lost[i-1] {
				bursts++
			}
		}
	}
	rate := float64(k) / n
	meanBurst := float64(k) / float64(bursts)
	t.Logf("GE: loss %.4f (model %.4f), mean burst %.2f (model %.2f)", rate, ge.MeanLoss(), meanBurst, 1/ge.R)
	if math.Abs(rate-ge.MeanLoss()) > 0.1*ge.MeanLoss() {
		t.Errorf("GE loss %.4f, want %.4f ± 10%%", rate, ge.MeanLoss())
	}
	if math.Abs(meanBurst-1/ge.R) > 0.1/ge.R {
		t.Errorf("GE mean burst %.2f, want %.2f ± 10%%", meanBurst, 1/ge.R)
	}
}

func TestBERLossDependsOnSize(t *testing.T) {
	const ber = 1e-5
	for _, size := range []int{100, 1500} {
		s := newSim(t, Params{BER: ber}, nil, 9)
		const n = 20000
		for i := 0; i < n; i++ {
			s.send(time.Duration(i)*time.Microsecond, ipv4UDP(size, 1, 0, 0))
		}
		p := 1 - math.Pow(1-ber, float64(8*size))
		if k := int(s.l.Counters().DropLoss); !binomialOK(k, n, p) {
			t.Errorf("size %d: lost %d of %d, want p = %.4f", size, k, n, p)
		}
	}
}

func TestDuplication(t *testing.T) {
	s := newSim(t, Params{Duplicate: 0.1}, nil, 2)
	const n = 10000
	for i := 0; i < n; i++ {
		s.send(time.Duration(i)*time.Microsecond, ipv4UDP(100, 1, 0, uint16(i)))
	}
	s.drain()
	d := len(s.out) - n
	if !binomialOK(d, n, 0.1) {
		t.Fatalf("%d duplicates of %d, want ≈ 10%%", d, n)
	}
	for _, p := range s.out {
		if p.Flags&FlagDuplicate != 0 && &p.Data[0] == nil {
			t.Fatal("duplicate without data")
		}
	}
}

func jitterRun(t *testing.T, dist Dist, reorder bool, spacing time.Duration) (delays []float64, inOrder bool) {
	s := newSim(t, Params{Delay: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, JitterDist: dist, Reorder: reorder}, nil, 4)
	for i := 0; i < 20000; i++ {
		s.send(time.Duration(i)*spacing, ipv4UDP(100, 1, 0, uint16(i)))
	}
	s.drain()
	inOrder = true
	for i, p := range s.out {
		delays = append(delays, (p.Sent-p.Arrival).Seconds()*1000)
		if i > 0 && p.Seq < s.out[i-1].Seq {
			inOrder = false
		}
	}
	return delays, inOrder
}

func TestJitterDistributions(t *testing.T) {
	for _, c := range []struct {
		dist   Dist
		wantSD float64
	}{{Uniform, 5 / math.Sqrt(3)}, {Normal, 5}, {Pareto, 5}} {
		// Spacing wider than the jitter span: order preservation never
		// bends the distribution.
		d, _ := jitterRun(t, c.dist, false, 100*time.Millisecond)
		mean, sd := meanSD(d)
		t.Logf("%s: mean %.3f ms sd %.3f ms (want 50, %.3f)", c.dist, mean, sd, c.wantSD)
		if math.Abs(mean-50) > 0.15 || math.Abs(sd-c.wantSD)/c.wantSD > 0.08 {
			t.Errorf("%s: mean %.3f sd %.3f, want 50 and %.3f", c.dist, mean, sd, c.wantSD)
		}
		if c.dist == Uniform && (quantile(d, 0) < 45 || quantile(d, 1) > 55) {
			t.Errorf("uniform outside [45, 55] ms")
		}
		if c.dist == Pareto && quantile(d, 0.5) >= mean {
			t.Errorf("pareto: median %.3f not below mean %.3f (right tail)", quantile(d, 0.5), mean)
		}
	}
}

func TestOrderPreservedUnlessReorder(t *testing.T) {
	if _, ok := jitterRun(t, Normal, false, 100*time.Microsecond); !ok {
		t.Error("order not preserved by default")
	}
	if _, ok := jitterRun(t, Normal, true, 100*time.Microsecond); ok {
		t.Error("reorder asked, none happened")
	}
}

func TestScheduleChangesRate(t *testing.T) {
	base := Params{RateBps: 100e6}
	sched, err := ParseSchedule([]string{"50ms:rate=20Mbit", "100ms:rate=100Mbit"}, base)
	if err != nil {
		t.Fatal(err)
	}
	s := newSim(t, base, sched, 1)
	// Saturate: 1250-byte packets every 50 µs (200 Mbit/s offered).
	for tm := time.Duration(0); tm < 150*time.Millisecond; tm += 50 * time.Microsecond {
		s.send(tm, ipv4UDP(1250, 1, 0, 0))
	}
	s.drain()
	txTimes := map[string][]float64{}
	for i := 1; i < len(s.out); i++ {
		p := s.out[i]
		gap := (p.Dequeue - s.out[i-1].Dequeue).Seconds() * 1e6
		switch {
		case p.Dequeue > 5*time.Millisecond && p.Dequeue < 49*time.Millisecond:
			txTimes["a"] = append(txTimes["a"], gap)
		case p.Dequeue > 51*time.Millisecond && p.Dequeue < 99*time.Millisecond:
			txTimes["b"] = append(txTimes["b"], gap)
		}
	}
	if g := quantile(txTimes["a"], 0.5); math.Abs(g-100) > 0.01 {
		t.Errorf("before the step: %.2f µs per packet, want 100", g)
	}
	if g := quantile(txTimes["b"], 0.5); math.Abs(g-500) > 0.01 {
		t.Errorf("after the step: %.2f µs per packet, want 500", g)
	}
	if s.l.Params().RateBps != 100e6 {
		t.Errorf("final rate %v, want 100 Mbit/s", s.l.Params().RateBps)
	}
}

func TestSeedReproducible(t *testing.T) {
	pattern := func(seed uint64) string {
		s := newSim(t, Params{Loss: 0.1, Delay: 10 * time.Millisecond, Jitter: 3 * time.Millisecond, JitterDist: Normal, Reorder: true}, nil, seed)
		var b strings.Builder
		for i := 0; i < 2000; i++ {
			p := s.send(time.Duration(i)*time.Millisecond, ipv4UDP(100, 1, 0, 0))
			if p.Fate == DropLoss {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		s.drain()
		for _, p := range s.out {
			b.WriteString(p.Due.String())
		}
		return b.String()
	}
	if pattern(42) != pattern(42) {
		t.Fatal("same seed, different loss/jitter pattern")
	}
	if pattern(42) == pattern(43) {
		t.Fatal("different seeds, same pattern")
	}
}

func TestMTUDropAndTooBig(t *testing.T) {
	s := newSim(t, Params{MTU: 1400}, nil, 1)
	p := s.send(0, ipv4UDP(1500, 1, 0, 0))
	if p.Fate != DropMTU {
		t.Fatalf("fate %v, want mtu", p.Fate)
	}
}

func TestValidationRefusesNonsense(t *testing.T) {
	for _, spec := range []string{"delay=-1ms", "loss=1.5", "limit=0", "limit=0B", "qdisc=red", "rate=-5Mbit", "dist=cauchy", "mtu=20", "jitter=-1ms", "bogus=1"} {
		if _, err := ParseParams(spec, Params{}); err == nil {
			t.Errorf("%q accepted", spec)
		} else {
			t.Logf("%q: %v", spec, err)
		}
	}
	if _, err := NewLink(Config{Params: Params{Loss: 2}}); err == nil {
		t.Error("NewLink accepted loss 2")
	}
	if _, err := ParseSchedule([]string{"10s:qdisc=codel"}, Params{}); err == nil {
		t.Error("schedule changing the qdisc accepted")
	}
}

func TestParseSpec(t *testing.T) {
	p, err := ParseParams("rate=0.7Mbit delay=9.5ms limit=300kbit qdisc=fq-codel ecn loss=4% ge=1%/30% jitter=1ms dist=pareto mtu=1400", Params{})
	if err != nil {
		t.Fatal(err)
	}
	if p.RateBps != 700e3 || p.Delay != 9500*time.Microsecond || p.LimitBytes != 37500 || p.Qdisc != FQCoDel || !p.ECN ||
		p.Loss != 0.04 || p.GE.P != 0.01 || p.GE.R != 0.3 || p.GE.H != 0 || p.GE.K != 1 || p.MTU != 1400 {
		t.Fatalf("parsed %+v", p)
	}
}

// TestParseLimit: packets, bytes in units' size syntax, and bits as tc
// writes them; a size that is no size is refused in one line.
func TestParseLimit(t *testing.T) {
	for in, want := range map[string][2]int{
		"1000p": {1000, 0}, "100pkts": {100, 0}, "20": {20, 0}, "37500B": {0, 37500}, "263KB": {0, 263000},
		"64KiB": {0, 65536}, "300kbit": {0, 37500}, "301kbit": {0, 37625}, "1Mbit": {0, 125000},
	} {
		p, b, err := ParseLimit(in)
		if err != nil || p != want[0] || b != want[1] {
			t.Errorf("ParseLimit(%q) = %d packets, %d bytes, %v; want %v", in, p, b, err, want)
		}
	}
	for _, in := range []string{"0", "0p", "-5", "99999999999999999999", "64kb", "1.5B", "fast", "0B", "10Mbit/s/s"} {
		if _, _, err := ParseLimit(in); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseLimit(%q): %v, want one line of error", in, err)
		}
	}
}
