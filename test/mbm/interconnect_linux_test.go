package mbm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
)

// interconnect is seed 002's figure 4-1 (hosts a-b-c-d, link b-c the
// bottleneck interconnection with a short RTT inside a long path), as the
// lab's built-in "interconnect" profile but with 0.3 % loss on the short
// link instead of 0.1 %: at 0.1 % the end-to-end FAIL needs 5,000 to
// 15,000 packets (8 to 22 s at the target), too long for make test, and
// TCP still holds the target rate; at 0.3 % Mathis' model gives
// 1.22 × MSS / (82 ms × √0.003) ≈ 3.1 Mbit/s, below the precondition,
// as in the seed, where the end-to-end path failed by its rate.
var interconnect = lab.Scenario{
	Name:        "interconnect-0.3",
	Description: "interconnect with 0.3 % loss on the short link",
	Links: []lab.ScenarioLink{
		{Name: "access-a", Both: "rate=100Mbit delay=20ms limit=1000p"},
		{Name: "interconnect", Both: "rate=10Mbit delay=1ms loss=0.003 limit=100p"},
		{Name: "access-d", Both: "rate=100Mbit delay=20ms limit=1000p"},
	},
}

// icRate is the target: 8 Mbit/s, under the 10 Mbit/s interconnect.
const icRate = 8e6

// TestInterconnect is seed 002 §4.2 (vantage-point independence): Basic
// Data Rate (8.1.1) at 8 Mbit/s on the short link (router-1 to router-2)
// with its own target RTT (2 ms: W 2, R 12) PASSes, the same link with
// the end-to-end target RTT (82 ms: W 57, R 9747) FAILs, and the
// end-to-end path FAILs, over UDP (the loss of the path, exact per
// packet) and over TCP (the seed's transport: the rate precondition).
// PASS takes on the order of 100 times fewer packets than FAIL. Each
// verdict is checked against the configured subpath's loss and rate.
func TestInterconnect(t *testing.T) {
	needLab(t)
	r := upLab(t, interconnect)
	n := len(r.profile.Links)
	icSrv := r.serve(2, 2)  // router-2, on the interconnect
	e2eSrv := r.serve(n, n) // the server
	icTruth, e2eTruth := r.subTruth(1, 2), r.subTruth(0, n)
	ownRTT := time.Duration(icTruth.BaseRTTMs * float64(time.Millisecond))
	e2eRTT := time.Duration(e2eTruth.BaseRTTMs * float64(time.Millisecond))
	own, long := plan(t, icRate, ownRTT, 0), plan(t, icRate, e2eRTT, 0)
	wantOwn, wantLong, wantE2E := expected(icTruth, own), expected(icTruth, long), expected(e2eTruth, long)
	if wantOwn != "PASS" || wantLong != "FAIL" || wantE2E != "FAIL" {
		t.Fatalf("the configured paths give %s, %s, %s: not seed 002's setting", wantOwn, wantLong, wantE2E)
	}
	args := func(rtt time.Duration, more ...string) []string {
		return append([]string{"--rate", fmt.Sprint(icRate), "--rtt", rtt.String(), "--tests", "8.1.1"}, more...)
	}
	type row struct {
		name, transport string
		x               run
	}
	var rows []row
	var passPackets, failPackets []int64
	var skips []string
	total := 0
	nRuns := runs(t, 2)
	z := zFamily(nRuns) // one loss check per run
	for i := range nRuns {
		x, tr, ok := checked(t, &skips, fmt.Sprintf("run %d: interconnect, own RTT", i+1), func() (run, truth) {
			x := r.mbm(1, icSrv, args(ownRTT)...)
			return x, r.truthOf(x, 17, 1, 2)
		}, verdictCheck(wantOwn))
		total++
		if ok {
			rows = append(rows, row{"interconnect, target RTT = its own " + ownRTT.String(), "udp", x})
			passPackets = append(passPackets, x.x.Packets)
			logTruth(t, tr)
		}
		x, tr, ok = checked(t, &skips, fmt.Sprintf("run %d: interconnect, end-to-end RTT", i+1), func() (run, truth) {
			x := r.mbm(1, icSrv, args(e2eRTT)...)
			return x, r.truthOf(x, 17, 1, 2)
		}, verdictCheck(wantLong))
		total++
		if ok {
			rows = append(rows, row{"interconnect, target RTT = end-to-end " + e2eRTT.String(), "udp", x})
			failPackets = append(failPackets, x.x.Packets)
			logTruth(t, tr)
		}
		if ok && !near(x.x.Loss, x.x.Packets, icTruth.UpLoss, z) && x.x.Packets > 1000 {
			t.Errorf("interconnect loss %.4g over %d packets, configured %.4g", x.x.Loss, x.x.Packets, icTruth.UpLoss)
		}
		x, tr, ok = checked(t, &skips, fmt.Sprintf("run %d: end to end, udp", i+1), func() (run, truth) {
			x := r.mbm(0, e2eSrv, args(e2eRTT)...)
			return x, r.truthOf(x, 17, 0, n)
		}, verdictCheck(wantE2E))
		total++
		if ok {
			rows = append(rows, row{"end to end, target RTT " + e2eRTT.String(), "udp", x})
			logTruth(t, tr)
		}
	}
	// TCP once per run too (the seed's transport): its growth period
	// lasts up to 5 s when the rate falls short.
	for i := range runs(t, 1) {
		x, tr, ok := checked(t, &skips, fmt.Sprintf("run %d: end to end, tcp", i+1), func() (run, truth) {
			x := r.mbm(0, e2eSrv, args(e2eRTT, "--mode", "tcp")...)
			return x, r.truthOf(x, 6, 0, n)
		}, verdictCheck(wantE2E))
		total++
		if ok {
			rows = append(rows, row{"end to end, target RTT " + e2eRTT.String(), "tcp", x})
			logTruth(t, tr)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "interconnection, target %g Mbit/s (seed 002 §4.2: PASS, FAIL, FAIL \"very consistently\"; FAIL took \"almost 100 times\" the packets of PASS)\n", icRate/1e6)
	fmt.Fprintf(&b, "  %-48s %-4s %-5s %-8s %-5s %-10s %s\n", "path, target", "mode", "W", "verdict", "marks", "packets", "reason")
	for _, rw := range rows {
		fmt.Fprintf(&b, "  %-48s %-4s %-5d %-8s %-5d %-10d %s\n", rw.name, rw.transport, rw.x.res.Model.WindowPackets, rw.x.x.Verdict, rw.x.x.Marks, rw.x.x.Packets, rw.x.x.Reason)
	}
	ratio := mean(failPackets) / mean(passPackets)
	fmt.Fprintf(&b, "  packets to decide on the interconnect: PASS (own RTT) mean %.1f, FAIL (end-to-end RTT) mean %.1f: ratio %.0f (%d runs)\n",
		mean(passPackets), mean(failPackets), ratio, len(passPackets))
	fmt.Fprintf(&b, "  %d of %d runs skipped (host too busy twice)\n", len(skips), total)
	t.Log("PROOF\n" + b.String())
	// On the order of 100: the SPRT's cheapest PASS here is 10 packets,
	// its average FAIL at 0.3 % about 2.12 / (0.003 − s) ≈ 760.
	if len(passPackets) > 0 && len(failPackets) > 0 && ratio < 20 {
		t.Errorf("FAIL took only %.1f times the packets of PASS", ratio)
	}
	skipIf(t, skips, total)
}

func logTruth(t *testing.T, tr truth) {
	t.Helper()
	t.Logf("  truth: %d packets, %d delivered, %d random drops, %d queue drops, largest backlog %d, lab p99 lateness %v",
		tr.packets, tr.delivered, tr.randomLoss, tr.queueDrops, tr.maxQueue, tr.lateP99)
}

func mean(v []int64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}
