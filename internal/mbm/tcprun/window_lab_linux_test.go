package tcprun

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// TestLabWindowed runs 8.1.2 at 10 Mbit/s, 20 ms (W = 18) through a
// clean 20 Mbit/s link (PASS: the window read back within W … W + slack,
// the packets in flight too, W delivered per RTT) and the same link with
// 1 % loss (FAIL). Expected verdicts come from the configured path.
func TestLabWindowed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
	if testing.Short() {
		t.Skip("lab test")
	}
	plan := testPlan(t)
	for _, c := range []struct{ name, up string }{
		{"clean", "rate=20Mbit delay=10ms limit=100p"},
		{"loss", "rate=20Mbit delay=10ms limit=100p loss=1%"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lp := upPath(t, "mbmwin"+c.name, c.up, "rate=20Mbit delay=10ms")
			want := expected(lp.lab.Truth(), plan, DefaultPrecondition)
			if want == "" {
				t.Fatalf("the configured path %+v gives no expected verdict", lp.lab.Truth())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			from := time.Since(lp.lab.Start)
			res, err := Run(ctx, Config{Streams: lp.session, Plan: plan, Tests: []string{TestWindowed}, Sysctl: lp.sysctl, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			tc := r.TCP
			// The emulator's truth: upstream data segments dropped (any
			// cause) over the run, and over its test period.
			all := lp.dropTruth(t, from, math.MaxInt64)
			test := all
			if tc.TestS > 0 {
				start := from + time.Duration(tc.GrowthS*float64(time.Second)) + 100*time.Millisecond
				test = lp.dropTruth(t, start, start+time.Duration(tc.TestS*float64(time.Second)))
			}
			t.Logf("truth (upstream data): this run %d packets, %d dropped; its test period %d packets, %d dropped", all.packets, all.drops, test.packets, test.drops)
			switch {
			case r.Verdict == "FAIL" && all.drops == 0:
				t.Errorf("FAIL, but the emulator dropped nothing in the run")
			case r.Verdict == "PASS" && test.drops > 0:
				t.Errorf("PASS, but the emulator dropped %d packets in the test period", test.drops)
			}
			slack := windowSlack(plan.W)
			t.Logf("%s: %s (%s); n %d m %d; W %d, window asked %d bytes, SO_RCVBUF set %d held %d (attempt %d); sender: max snd_wnd %d bytes (%.2f packets), max in flight %d; server: max rcv_wnd %d, rcv_space %d, clamp %d, %d bytes; %.2f delivered per RTT over %d spans (%.0f %% short); goodput %.4g Mbit/s, growth %.2f s, test %.2f s, retrans %d dsack %d",
				c.name, r.Verdict, r.Reason, r.Packets, r.Marks, tc.WindowPackets, tc.ReceiveWindowBytes, tc.ReceiveBufferSetBytes, tc.ReceiveBufferBytes, tc.WindowAttempts,
				tc.MaxSndWndBytes, float64(tc.MaxSndWndBytes)/float64(tc.MSS), tc.MaxInFlight, tc.ServerMaxRcvWndBytes, tc.ServerRcvSpaceBytes, tc.ServerWindowClampBytes, tc.ServerBytes,
				tc.DeliveredPerRTT, tc.RTTSpans, tc.ShortRTTPct, tc.GoodputBps/1e6, tc.GrowthS, tc.TestS, tc.Retrans, tc.DSACKDups)
			if tc.WindowPackets != plan.W || tc.ReceiveWindowBytes != int(plan.W)*1448 || tc.ReceiveBufferBytes < 2*tc.ReceiveBufferSetBytes {
				t.Errorf("window %d packets, %d bytes, buffer set %d held %d: want W = %d, %d bytes, held ≥ 2 × set", tc.WindowPackets, tc.ReceiveWindowBytes, tc.ReceiveBufferSetBytes, tc.ReceiveBufferBytes, plan.W, plan.W*1448)
			}
			if string(r.Verdict) != want {
				lp.mismatch(t, "verdict %s, want %s from the configured path", r.Verdict, want)
			}
			if r.Verdict == "FAIL" && strings.Contains(r.Reason, "SPRT") && r.Marks < plan.CheapestFail {
				t.Errorf("FAIL by the SPRT with %d marks, fewer than the cheapest FAIL %d", r.Marks, plan.CheapestFail)
			}
			if want != "PASS" {
				return
			}
			if tc.MaxInFlight > plan.W+slack || tc.MaxSndWndBytes > (plan.W+slack)*int64(tc.MSS) || tc.MaxSndWndBytes < plan.W*int64(tc.MSS)-int64(tc.MSS/2) {
				t.Errorf("window read back %d bytes, %d in flight: want W·MSS = %d … (W + %d)·MSS, in flight ≤ W + %d", tc.MaxSndWndBytes, tc.MaxInFlight, plan.W*int64(tc.MSS), slack, slack)
			}
			if tc.ServerMaxRcvWndBytes > 0 && tc.ServerMaxRcvWndBytes > (plan.W+slack)*int64(tc.MSS) {
				t.Errorf("the server advertised up to %d bytes, above (W + %d)·MSS", tc.ServerMaxRcvWndBytes, slack)
			}
			if math.Abs(tc.DeliveredPerRTT-float64(plan.W)) > float64(slack) {
				lp.mismatch(t, "%.2f delivered per RTT, want W = %d ± %d", tc.DeliveredPerRTT, plan.W, slack)
			}
			if r.Packets < plan.CheapestPass {
				t.Errorf("PASS after %d packets, fewer than the cheapest PASS %d", r.Packets, plan.CheapestPass)
			}
		})
	}
}

// TestLabWindowReadback measures, through the protocol, the window the
// server's rule (mbmwire.ReceiveBufferFor) gives for four targets at
// 20 ms (W from 6 to 28): the sender writes unpaced for 1.5 s, the
// largest tcpi_snd_wnd and tcpi_unacked are read back beside the
// server's largest tcpi_rcv_wnd. Each must be within W … W + slack.
func TestLabWindowReadback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
	if testing.Short() {
		t.Skip("lab test")
	}
	lp := upPath(t, "mbmwinrb", "rate=50Mbit delay=10ms limit=200p", "rate=50Mbit delay=10ms")
	var bad []string
	for _, rate := range []float64{4e6, 8e6, 10e6, 16e6} {
		p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: rate, RTT: 20 * time.Millisecond, MTU: 1500, HeaderOverhead: 52}, Alpha: 0.05, Beta: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		window := int(p.W) * 1448
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ws, err := lp.session.OpenWindowed(ctx, WindowRequest{Test: TestWindowed, RateBps: rate, TargetRTT: p.RTT, MTU: 1500, Duration: 5 * time.Second, WindowBytes: window})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		rc, err := tcpinfo.RawConn(ws.Conn)
		if err != nil {
			t.Fatal(err)
		}
		stop := time.Now().Add(1500 * time.Millisecond)
		go func() {
			b := make([]byte, 64<<10)
			_ = ws.SetWriteDeadline(stop)
			for time.Now().Before(stop) {
				if _, err := ws.Write(b); err != nil {
					return
				}
			}
		}()
		var maxWnd, maxUna uint32
		var mss uint32
		for time.Now().Before(stop) {
			time.Sleep(5 * time.Millisecond)
			smp, err := tcpinfo.Read(rc, 0)
			if err != nil {
				break
			}
			maxWnd, maxUna, mss = max(maxWnd, smp.SndWnd), max(maxUna, smp.Unacked), smp.SndMSS
		}
		rep, err := ws.End(ctx, "", "window readback")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		fit, why := fitWindow(int64(maxWnd), int64(maxUna), p.W, int(mss))
		t.Logf("target %.0f Mbit/s: W %d, W·MSS %d bytes; SO_RCVBUF set %d held %d; sender max snd_wnd %d bytes (%.2f packets of %d), max in flight %d; server max rcv_wnd %d, rcv_space %d, clamp %d; fit %d %s",
			rate/1e6, p.W, window, rep.TCP.ReceiveBufferSetBytes, rep.TCP.ReceiveBufferBytes, maxWnd, float64(maxWnd)/float64(mss), mss, maxUna,
			rep.TCP.MaxRcvWndBytes, rep.TCP.RcvSpaceBytes, rep.TCP.WindowClampBytes, fit, why)
		if fit != windowOK {
			bad = append(bad, why)
		}
		if rep.TCP.ReceiveBufferSetBytes != mbmwire.ReceiveBufferFor(window) {
			t.Errorf("buffer set %d, want the rule's %d", rep.TCP.ReceiveBufferSetBytes, mbmwire.ReceiveBufferFor(window))
		}
	}
	if len(bad) > 0 {
		lp.mismatch(t, "%s", strings.Join(bad, "; "))
	}
}

// dropTruth counts the upstream data segments (TCP, longer than 1000
// bytes) that arrived at the link from from to to (lab time), and those of
// them it dropped, whatever the cause.
func (lp *labPath) dropTruth(t *testing.T, from, to time.Duration) queueTruth {
	t.Helper()
	if err := lp.lab.FlushTruth(); err != nil {
		t.Fatal(err)
	}
	_, recs, err := emulator.ReadTruthFile(lp.truth)
	if err != nil {
		t.Fatal(err)
	}
	var q queueTruth
	for _, rec := range recs {
		if rec.Dir != emulator.Up || rec.Proto != 6 || rec.Length <= 1000 || rec.Arrival < from || rec.Arrival > to {
			continue
		}
		q.packets++
		if rec.Fate != emulator.Delivered && rec.Fate != emulator.Queued {
			q.drops++
		}
	}
	return q
}
