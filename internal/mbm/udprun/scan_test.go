package udprun

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// synthScan builds the record a scan would make through one bottleneck of
// pps packets/s and a base RTT, window w0 … wLast, +1 every two windows:
// every packet's RTT is rtt(w) (the caller's queue model) and lost(w, i)
// says whether packet i of window w's step is lost. The target is the
// bottleneck's 4 Mbit/s (333 packets/s).
func synthScan(base time.Duration, pps float64, w0, wLast int64, rtt func(w int64) time.Duration, lost func(w, i int64) bool) *scanData {
	d := &scanData{base: base, targetRTT: 20 * time.Millisecond, targetPPS: 1e9 / 3e6, runLength: 147, packetBit: 12000, ceiling: 8e6, scanFrom: 0, stop: "synthetic"}
	t := int64(0)
	for w := w0; w <= wLast; w++ {
		s := scanStep{w: w, from: int64(len(d.fate))}
		for i := range scanStepRTTs * w {
			d.sendNs = append(d.sendNs, t+1)
			t += int64(1e9 / pps)
			if lost(w, i) {
				d.fate = append(d.fate, fateLost)
				d.rttNs = append(d.rttNs, 0)
			} else {
				d.fate = append(d.fate, fateArrived)
				d.rttNs = append(d.rttNs, int64(rtt(w)))
			}
		}
		s.to = int64(len(d.fate))
		d.steps = append(d.steps, s)
	}
	return d
}

// dropTail: a path of 333 packets/s (4 Mbit/s of 1500-byte packets),
// 20 ms base RTT (BDP 6.7 packets) and a queue of q packets: the RTT is
// the window's drain time, and a window over BDP + q loses one packet a
// round trip per packet over.
func dropTail(q int64) (rtt func(int64) time.Duration, lost func(w, i int64) bool) {
	const pps, base = 1e9 / 3e6, 20 * time.Millisecond
	bdp := pps * base.Seconds()
	rtt = func(w int64) time.Duration { return max(base, time.Duration(float64(w)/pps*1e9)) }
	lost = func(w, i int64) bool {
		over := w - int64(bdp+float64(q))
		return over > 0 && i%w < over
	}
	return rtt, lost
}

func TestAnalyzeScan(t *testing.T) {
	const pps = 1e9 / 3e6
	base := 20 * time.Millisecond
	for _, c := range []struct {
		name         string
		wLast        int64
		rtt          func(int64) time.Duration
		lost         func(w, i int64) bool
		want         [4]string // 8.2.1 … 8.2.4
		queueLo, qHi float64   // ms at the first mark
	}{
		{name: "short queue", wLast: 20, want: [4]string{"PASS", "PASS", "PASS", "PASS"}, queueLo: 30, qHi: 34},
		{name: "bloated", wLast: 50, want: [4]string{"PASS", "FAIL", "INCONCLUSIVE", "PASS"}, queueLo: 125, qHi: 131},
		{name: "burst loss", wLast: 20, want: [4]string{"PASS", "PASS", "FAIL", "PASS"}, queueLo: 30, qHi: 34},
		{name: "early loss", wLast: 12, want: [4]string{"FAIL", "PASS", "PASS", "PASS"}},
		{name: "half duplex", wLast: 30, want: [4]string{"PASS", "FAIL", "INCONCLUSIVE", "FAIL"}},
		{name: "half duplex, no target", wLast: 30, want: [4]string{"PASS", "FAIL", "INCONCLUSIVE", "PASS"}},
		{name: "no queue", wLast: 12, want: [4]string{"INCONCLUSIVE", "INCONCLUSIVE", "INCONCLUSIVE", "INCONCLUSIVE"}},
	} {
		rtt, lost := dropTail(10)
		switch c.name {
		case "bloated":
			rtt, lost = dropTail(100)
		case "burst loss": // a policer: the whole tail of a window at once
			_, l := dropTail(10)
			lost = func(w, i int64) bool { return l(w, i) || (w == 17 && i >= 20) }
		case "early loss": // loss at window 10, with a queue of 3 packets
			rtt, _ = dropTail(10)
			lost = func(w, i int64) bool { return w >= 10 && i == 0 }
		case "half duplex", "half duplex, no target":
			// Every packet of the window waits twice (RFC 8337 §8.2.4: the
			// ACK waits for the data), so the window-clocked stream gets
			// half the rate: delivery rate and RTT agree (Little's law).
			rtt = func(w int64) time.Duration { return max(base, time.Duration(2*float64(w)/pps*1e9)) }
			lost = func(w, i int64) bool { return false }
		case "no queue":
			rtt = func(int64) time.Duration { return base }
			lost = func(w, i int64) bool { return false }
		}
		d := synthScan(base, pps, 2, c.wLast, rtt, lost)
		if strings.HasPrefix(c.name, "half duplex") {
			d = synthScan(base, pps/2, 2, c.wLast, rtt, lost)
		}
		if c.name == "half duplex, no target" {
			// Judged at its own delivery rate, the stream shows nothing.
			d.targetPPS = 0
		}
		out := analyzeScan(d)
		for i, id := range []string{TestScanCA, TestScanBloat, TestScanLoss, TestScanDuplex} {
			if v := out.verdicts[id]; string(v.verdict) != c.want[i] {
				t.Errorf("%s: %s %s (%s), want %s", c.name, id, v.verdict, v.reason, c.want[i])
			}
		}
		sc := out.scan
		t.Logf("%s: 8.2.4 %s (%s)", c.name, out.verdicts[TestScanDuplex].verdict, out.verdicts[TestScanDuplex].reason)
		if c.qHi > 0 && (sc.QueueAtMarkMs < c.queueLo || sc.QueueAtMarkMs > c.qHi) {
			t.Errorf("%s: queue at the mark %.1f ms, want %g to %g", c.name, sc.QueueAtMarkMs, c.queueLo, c.qHi)
		}
		if c.name == "short queue" {
			// Onset: the window of 6 is the last below the BDP (6.7) + 1 ms.
			if sc.OnsetWindow != 7 || sc.FirstMarkWindow != 17 || sc.CapacityBps < 3.9e6 || sc.CapacityBps > 4.1e6 {
				t.Errorf("short queue: onset %d, mark at %d, capacity %g", sc.OnsetWindow, sc.FirstMarkWindow, sc.CapacityBps)
			}
			if sc.LossesAtOnset != 2 || sc.AllowedLosses != 2 {
				t.Errorf("short queue: %d losses at the onset, %d allowed", sc.LossesAtOnset, sc.AllowedLosses)
			}
		}
	}
}

func TestAnalyzeAQM(t *testing.T) {
	base := 20 * time.Millisecond
	// Three rounds of 100 packets; the mark at packet 40 of each; the
	// packet after it queued sojourn above the base.
	mk := func(sojourn time.Duration, mark bool) *aqmData {
		d := &aqmData{base: base, targetRTT: 20 * time.Millisecond, rateBps: 8e6, packetBit: 12000, minRateFraction: 0.9}
		for r := range int64(3) {
			from := r * 100
			for i := range int64(100) {
				d.sendNs = append(d.sendNs, (from+i)*1_500_000+1)
				f, rtt := uint8(fateArrived), int64(base)+i*int64(sojourn)/41
				if mark && i == 40 {
					f, rtt = fateLost, 0
				}
				d.fate, d.rttNs = append(d.fate, f), append(d.rttNs, rtt)
			}
			d.rounds = append(d.rounds, scanStep{from: from, to: from + 100})
		}
		return d
	}
	for _, c := range []struct {
		sojourn time.Duration
		mark    bool
		want    string
	}{{15 * time.Millisecond, true, "PASS"}, {5 * time.Millisecond, true, "FAIL"}, {5 * time.Millisecond, false, "INCONCLUSIVE"}} {
		a, v := analyzeAQM(mk(c.sojourn, c.mark))
		if string(v.verdict) != c.want || len(a.Rounds) != 3 {
			t.Errorf("sojourn %s, mark %v: %s (%s), want %s", c.sojourn, c.mark, v.verdict, v.reason, c.want)
		}
	}
}

// TestLoopbackScan: on loopback nothing queues at twice 4 Mbit/s: the
// scan stops once its window no longer binds, and every 8.2 test is
// INCONCLUSIVE, saying so; 8.1.3 PASSes at a tenth of the rate.
func TestLoopbackScan(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	p := smallPlan(t, 4e6)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tests, err := Run(ctx, Config{Server: addr, Software: "test", Plan: p,
		Tests: []string{TestScanBloat, TestScanCA, TestScanLoss, TestScanDuplex, TestBackground}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 5 {
		t.Fatalf("%d tests", len(tests))
	}
	for i, id := range []string{TestScanBloat, TestScanCA, TestScanLoss, TestScanDuplex} {
		r := tests[i]
		if r.ID != id || r.UDP == nil || r.UDP.Scan == nil {
			t.Fatalf("test %d: %s, %+v", i, r.ID, r.UDP)
		}
		if r.Verdict != "INCONCLUSIVE" || r.Marks != 0 {
			t.Errorf("%s: %s (%s), %d marks", r.ID, r.Verdict, r.Reason, r.Marks)
		}
		if sc := r.UDP.Scan; !strings.Contains(sc.Stop, "no longer binds") || sc.BaseRTTMs <= 0 || len(sc.Steps) == 0 {
			t.Errorf("%s: stop %q, base %g ms, %d steps", r.ID, sc.Stop, sc.BaseRTTMs, len(sc.Steps))
		}
	}
	bg := tests[4]
	if why := hostReason([]model.MBMTest{bg}); why != "" {
		t.Skipf("the host was too busy to send the pattern: %s", why)
	}
	if bg.ID != TestBackground || bg.Verdict != "PASS" || bg.Packets != p.CheapestPass {
		t.Errorf("8.1.3: %s (%s) after %d packets", bg.Verdict, bg.Reason, bg.Packets)
	}
	if bg.UDP.SenderRateBps > 0.11*p.RateBps || bg.UDP.SenderRateBps < 0.09*p.RateBps {
		t.Errorf("8.1.3 sent at %g bit/s, want a tenth of %g", bg.UDP.SenderRateBps, p.RateBps)
	}
}

// TestLoopbackAQM: on loopback no round meets a loss or mark: 8.3.2 is
// INCONCLUSIVE after its three rounds.
func TestLoopbackAQM(t *testing.T) {
	if testing.Short() {
		t.Skip("three rounds and their pauses: 8 s")
	}
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	p := smallPlan(t, 20e6)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tests, err := Run(ctx, Config{Server: addr, Software: "test", Plan: p, Tests: []string{TestAQM}, MinRateFraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) != 1 || tests[0].UDP == nil || tests[0].UDP.AQM == nil {
		t.Fatalf("%+v", tests)
	}
	r := tests[0]
	if strings.HasPrefix(r.Reason, "pattern not produced") {
		t.Skipf("the host was too busy: %s", r.Reason)
	}
	if r.Verdict != "INCONCLUSIVE" || len(r.UDP.AQM.Rounds) != aqmRounds || r.Marks != 0 {
		t.Errorf("%s (%s), %d rounds, %d marks", r.Verdict, r.Reason, len(r.UDP.AQM.Rounds), r.Marks)
	}
}

// FuzzLoopObserve: a feedback datagram from the network, whatever it
// holds, moves a closed-loop sender's record only within what was sent:
// no index beyond it, no fate counted twice.
func FuzzLoopObserve(f *testing.F) {
	fb := func(first uint64, count uint32, next uint64, arrived, ce byte) []byte {
		nb := int((count + 7) / 8)
		a, c := make([]byte, nb), make([]byte, nb)
		for i := range nb {
			a[i], c[i] = arrived, ce
		}
		b, _ := mbmwire.AppendFeedback(nil, &mbmwire.Feedback{Token: 7, First: first, Count: count, Next: next, Received: uint64(count), Arrived: a, CEMarks: c})
		return b
	}
	f.Add(fb(0, 8, 8, 0xff, 0))
	f.Add(fb(0, 16, 16, 0xf0, 0x0f))
	f.Add(fb(30, 64, 100, 0, 0))
	f.Add(fb(5, 3, 9, 0x5, 0x2))
	f.Fuzz(func(t *testing.T, b []byte) {
		const sent = 20
		l := &loop{token: 7, limit: sent, sent: sent, sendNs: make([]int64, sent), rttNs: make([]int64, sent), fate: make([]uint8, sent), first: -1}
		for i := range l.sendNs {
			l.sendNs[i] = int64(i + 1)
		}
		for range 2 { // twice: a repeated feedback counts nothing again
			fb, err := mbmwire.ParseFeedback(b)
			if err != nil || fb.Token != l.token {
				return
			}
			l.observe(&fb, time.Unix(0, 1000))
		}
		var lost, marks int64
		for _, x := range l.fate {
			if x == fateLost {
				lost++
			}
			if x == fateLost || x == fateCE {
				marks++
			}
		}
		if l.final > sent || l.next > sent || l.lost != lost || l.marks != marks || l.first >= sent {
			t.Fatalf("final %d next %d lost %d/%d marks %d/%d first %d", l.final, l.next, l.lost, lost, l.marks, marks, l.first)
		}
	})
}

func TestBackgroundPattern(t *testing.T) {
	p := smallPlan(t, 4e6)
	pt, err := newPattern(TestBackground, p, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	// A tenth of the target: one 1500-byte packet every 30 ms, not 3 ms.
	if pt.Gap != 30*time.Millisecond || pt.Headway != pt.Gap || pt.Rate != 4e5 {
		t.Errorf("%+v", pt)
	}
	for _, id := range []string{TestScanCA, TestScanBloat, TestScanLoss, TestScanDuplex, TestAQM} {
		if _, err := newPattern(id, p, 1, 1); err == nil || !closedLoop(id) {
			t.Errorf("%s: a pattern (%v)", id, err)
		}
		if err := Validate(Config{Plan: p, Tests: []string{id}}); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

// TestScanAboveLimit: the scan paces at most at twice the target; a
// server whose limit is below that refuses it, and the error says why.
func TestScanAboveLimit(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1, UDPMaxBitrate: 6e6})
	_, err := Run(context.Background(), Config{Server: addr, Plan: smallPlan(t, 4e6), Tests: []string{TestScanBloat}})
	if err == nil || !strings.Contains(err.Error(), "limit of 6.0 Mbit/s") || !strings.Contains(err.Error(), "paced at most at 8 Mbit/s") {
		t.Fatalf("err %v, want the ceiling and the server's limit named", err)
	}
}

func TestScanHostReason(t *testing.T) {
	d := &scanData{base: 20 * time.Millisecond, refills: 100, lateRefills: 5, maxLag: 3 * time.Millisecond}
	if r := scanHostReason(d, 0); r != "" {
		t.Errorf("5 %% late: %q", r)
	}
	d.lateRefills = 6
	if r := scanHostReason(d, 0); !strings.Contains(r, "6 of 100 window refills came more than 2ms after") {
		t.Errorf("6 %% late: %q", r)
	}
	if r := scanHostReason(&scanData{}, 3); !strings.Contains(r, "refused to send 3 packets") {
		t.Errorf("send errors: %q", r)
	}
}
