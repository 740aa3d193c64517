package tcprun

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
)

// TestBenchRate is bench/mbm_tcp.sh's grid, run only when
// SONDE_BENCH_MBM_TCP lists target rates in Mbit/s ("1,10,100,500"):
// 8.1.1 through a clean lab link of twice the target's rate, with the
// target RTT (the link's RTT) chosen so that the cheapest PASS takes
// about 2 s at the target rate. Each point prints one "BENCH" line: the
// target, the goodput over the test period and their ratio (the issue's
// bar: within 2 %), the verdict and the lab's forwarder lateness.
func TestBenchRate(t *testing.T) {
	spec := os.Getenv("SONDE_BENCH_MBM_TCP")
	if spec == "" {
		t.Skip("set SONDE_BENCH_MBM_TCP (bench/mbm_tcp.sh)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
	for _, f := range strings.Split(spec, ",") {
		mbit, err := strconv.ParseFloat(f, 64)
		if err != nil || !(mbit >= 0.1 && mbit <= 2000) {
			t.Fatalf("SONDE_BENCH_MBM_TCP item %q: want Mbit/s, 0.1 to 2000", f)
		}
		rate := mbit * 1e6
		// 3W² packets ≈ 2 s at the rate: W = √(2 s × rate / 11584 / 3).
		w := math.Sqrt(2 * rate / (8 * 1448) / 3)
		rtt := time.Duration(math.Round(w*8*1448/rate*1e4)) * 100 * time.Microsecond
		t.Run(fmt.Sprintf("%gMbit", mbit), func(t *testing.T) {
			plan, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: rate, RTT: rtt, MTU: 1500, HeaderOverhead: 52}, Alpha: 0.05, Beta: 0.05})
			if err != nil {
				t.Fatal(err)
			}
			half := fmt.Sprintf("%gms", float64(rtt.Microseconds())/2000)
			lp := upPath(t, "mbmbench", fmt.Sprintf("rate=%gMbit delay=%s", 2*mbit, half), fmt.Sprintf("rate=%gMbit delay=%s", 2*mbit, half))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := Run(ctx, Config{Streams: lp.session, Plan: plan, Tests: []string{TestPaced}, Sysctl: lp.sysctl})
			if err != nil {
				t.Fatal(err)
			}
			r := res[0]
			tc := r.TCP
			late := lp.lateness(t)
			fmt.Printf("BENCH target_mbit=%g rtt_ms=%.1f W=%d goodput_mbit=%.4f ratio=%.4f verdict=%s n=%d m=%d test_s=%.2f min_window_mbit=%.4f lab_p99_lateness_ms=%.2f reason=%q\n",
				mbit, float64(rtt.Microseconds())/1000, plan.W, tc.GoodputBps/1e6, tc.GoodputBps/rate, r.Verdict, r.Packets, r.Marks, tc.TestS,
				tc.MinWindowRateBps/1e6, float64(late.Microseconds())/1000, r.Reason)
		})
	}
}
