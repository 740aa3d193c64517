package udprun

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// smallPlan is a target that decides in about a hundred packets: 4 Mbit/s
// at 10 ms, W = 4, R = 48.
func smallPlan(t *testing.T, rate float64) mbm.Plan {
	t.Helper()
	p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: rate, RTT: 10 * time.Millisecond, MTU: 1500, HeaderOverhead: mbm.DefaultHeaderOverhead},
		Alpha: mbm.DefaultAlpha, Beta: mbm.DefaultBeta})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPatterns(t *testing.T) {
	p := smallPlan(t, 4e6)
	gap := time.Duration(1500 * 8 / 4e6 * 1e9)
	for _, c := range []struct {
		id            string
		burst, sub    int64
		subGap, headw time.Duration
	}{
		{TestPaced, 1, 1, 0, gap},
		{TestBursts, 2, 2, 0, 2 * gap}, // W·0.5 = 2
		{TestSenderBur, 10, 10, 0, 10 * gap},
		{TestSlowstart, 4, 4, 2 * gap, 4 * gap},
	} {
		pt, err := newPattern(c.id, p, 0.5, 10)
		if err != nil {
			t.Fatal(err)
		}
		if pt.Burst != c.burst || pt.Sub != c.sub || pt.SubGap != c.subGap || pt.Headway != c.headw {
			t.Errorf("%s: %+v", c.id, pt)
		}
		// Every pattern's mean rate is the target's: Burst packets per Headway.
		if got := float64(pt.Burst) * 1500 * 8 / pt.Headway.Seconds(); got < 0.999*4e6 || got > 1.001*4e6 {
			t.Errorf("%s: mean rate %g", c.id, got)
		}
	}
	// 8.3.1 with W = 10: sub-bursts of 4, 4, 2 at twice the rate.
	pt := pattern{Burst: 10, Sub: 4, SubGap: time.Millisecond, Headway: 10 * time.Millisecond}
	for _, c := range []struct {
		i   int64
		off time.Duration
		n   int64
	}{{0, 0, 4}, {4, time.Millisecond, 4}, {8, 2 * time.Millisecond, 2}, {10, 10 * time.Millisecond, 4}} {
		if off, n := pt.at(c.i); off != c.off || n != c.n {
			t.Errorf("at(%d) = %v, %d; want %v, %d", c.i, off, n, c.off, c.n)
		}
	}
	if _, err := newPattern("8.9", p, 1, 1); err == nil {
		t.Error("unknown test accepted")
	}
	if _, err := newPattern(TestBursts, p, 1.5, 1); err == nil {
		t.Error("derate 1.5 accepted")
	}
}

// TestTolerance: a burst may be late by a tenth of its spacing before it
// counts as missed and the schedule moves, so that two bursts are never
// closer than 0.9 of their headway (a burst late by most of its headway,
// as the old one-spacing tolerance let through, is all but back to back
// with the next); lone packets keep one spacing or 1 ms.
func TestTolerance(t *testing.T) {
	p := smallPlan(t, 4e6)
	gap := time.Duration(1500 * 8 / 4e6 * 1e9) // 3 ms
	for _, c := range []struct {
		id   string
		want time.Duration
	}{
		{TestPaced, gap},
		{TestBursts, 2 * gap / 10},
		{TestSenderBur, 10 * gap / 10},
		{TestSlowstart, 4 * gap / 10}, // W = 4: one sub-burst a headway
	} {
		pt, err := newPattern(c.id, p, 0.5, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := pt.tolerance(); got != c.want {
			t.Errorf("%s: tolerance %v, want %v", c.id, got, c.want)
		}
		if pt.Sub > 1 && pt.spacing()-pt.tolerance() < pt.spacing()*9/10 {
			t.Errorf("%s: bursts may come %v apart, under 0.9 of %v", c.id, pt.spacing()-pt.tolerance(), pt.spacing())
		}
	}
	fast := pattern{Burst: 4, Sub: 4, Headway: 200 * time.Microsecond}
	if got := fast.tolerance(); got != 100*time.Microsecond {
		t.Errorf("short headway: tolerance %v, want the 100 µs floor", got)
	}
}

// TestLoopbackPass runs 8.1.1, 8.1.2 and 8.5.1 at 4 Mbit/s on loopback, where
// nothing is lost: both PASS, after about R packets, and stop there.
func TestLoopbackPass(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1})
	p := smallPlan(t, 4e6)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var tests []model.MBMTest
	for try := 0; ; try++ {
		var err error
		tests, err = Run(ctx, Config{Server: addr, Software: "test", Plan: p, Tests: []string{TestPaced, TestWindowed, TestBursts}, Derate: 1})
		if err != nil {
			t.Fatal(err)
		}
		why := hostReason(tests)
		if why == "" {
			break
		}
		// The runner's own check: this host did not send the pattern.
		if try == 1 {
			t.Skipf("the host was too busy to send the pattern twice: %s", why)
		}
		t.Logf("try %d: %s", try+1, why)
	}
	if len(tests) != 3 {
		t.Fatalf("%d tests", len(tests))
	}
	for _, r := range tests {
		if r.Verdict != "PASS" {
			t.Errorf("%s: %s (%s), %+v", r.ID, r.Verdict, r.Reason, r)
			continue
		}
		if r.Marks != 0 || r.Packets != p.CheapestPass || r.UDP.DecisionPackets != r.Packets {
			t.Errorf("%s: n %d m %d decided after %d; want %d clean packets", r.ID, r.Packets, r.Marks, r.UDP.DecisionPackets, p.CheapestPass)
		}
		// The SPRT stopped the sender: far fewer packets than the truncation.
		if r.UDP.PacketsSent >= r.UDP.GrowthPackets+p.MaxPackets {
			t.Errorf("%s: sent %d packets, the whole plan: the decision did not stop it", r.ID, r.UDP.PacketsSent)
		}
		if r.UDP.SenderRateBps < 0.9*p.RateBps || r.UDP.Deadlines == 0 {
			t.Errorf("%s: sender rate %g, %d deadlines", r.ID, r.UDP.SenderRateBps, r.UDP.Deadlines)
		}
	}
}

func TestNoMBMServer(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	defer ts.Close()
	_, err := Run(context.Background(), Config{Server: ts.URL, Plan: smallPlan(t, 4e6), Tests: []string{TestPaced}})
	if !errors.Is(err, ErrNoMBM) {
		t.Fatalf("err %v, want ErrNoMBM", err)
	}
}

func TestRateAboveLimit(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1, UDPMaxBitrate: 1e6})
	_, err := Run(context.Background(), Config{Server: addr, Plan: smallPlan(t, 4e6), Tests: []string{TestPaced}})
	if err == nil || !strings.Contains(err.Error(), "limit of 1.0 Mbit/s") {
		t.Fatalf("err %v, want the server's limit named", err)
	}
}

// hostReason is the reason of the first test whose pattern this host did
// not produce (the runner's conformance check), "" if none.
func hostReason(tests []model.MBMTest) string {
	for _, x := range tests {
		if strings.HasPrefix(x.Reason, "pattern not produced") || strings.HasPrefix(x.Reason, "the sender could not") {
			return x.ID + ": " + x.Reason
		}
	}
	return ""
}

// TestServerGone: the server goes away mid-test; the test is ERROR with
// what was counted so far, and Run says why.
func TestServerGone(t *testing.T) {
	srv := servertest.Run(t, server.Config{PerIPPerMinute: -1, UDPAddr: "off"}, servertest.Options{})
	// 4 Mbit/s at 50 ms: W 18, the cheapest PASS 952 packets (2.9 s).
	p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: 4e6, RTT: 50 * time.Millisecond, MTU: 1500, HeaderOverhead: mbm.DefaultHeaderOverhead},
		Alpha: mbm.DefaultAlpha, Beta: mbm.DefaultBeta})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(700*time.Millisecond, srv.Stop)
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	tests, err := Run(rctx, Config{Server: srv.Addr, Plan: p, Tests: []string{TestPaced}})
	srv.Stop()
	if err == nil || len(tests) != 1 {
		t.Fatalf("err %v, %d tests", err, len(tests))
	}
	x := tests[0]
	if x.Verdict != "ERROR" || x.Packets == 0 || x.UDP.PacketsSent == 0 || x.Packets >= p.CheapestPass {
		t.Errorf("partial result: %s (%s), n %d, sent %d", x.Verdict, x.Reason, x.Packets, x.UDP.PacketsSent)
	}
	t.Logf("%s: %s; n %d of %d sent", x.Verdict, x.Reason, x.Packets, x.UDP.PacketsSent)
}

// TestGrantEnds: a server whose duration limit is shorter than the test
// needs: the sender stops at the grant and the test is INCONCLUSIVE.
func TestGrantEnds(t *testing.T) {
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1, MaxDuration: time.Second})
	// 4 Mbit/s at 50 ms: the cheapest PASS is 952 packets, 2.9 s.
	p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: 4e6, RTT: 50 * time.Millisecond, MTU: 1500, HeaderOverhead: mbm.DefaultHeaderOverhead},
		Alpha: mbm.DefaultAlpha, Beta: mbm.DefaultBeta})
	if err != nil {
		t.Fatal(err)
	}
	tests, err := Run(context.Background(), Config{Server: addr, Plan: p, Tests: []string{TestPaced}})
	if err != nil || len(tests) != 1 {
		t.Fatalf("%v, %d tests", err, len(tests))
	}
	x := tests[0]
	if hostReason(tests) != "" {
		t.Skipf("the host was too busy: %s", x.Reason)
	}
	if x.Verdict != "INCONCLUSIVE" || !strings.Contains(x.Reason, "server's grant") || x.UDP.DurationMs > 1100 || x.UDP.PacketsSent > 400 {
		t.Errorf("%s (%s), sent %d in %.0f ms", x.Verdict, x.Reason, x.UDP.PacketsSent, x.UDP.DurationMs)
	}
}
