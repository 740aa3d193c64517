package spinbit

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// appLimitedRun feeds a synthetic flow with known RTT w.r and reports the
// share of samples flagged app-limited and the mean and median |error| of
// the valid full samples, in % of w.r.
func appLimitedRun(ps []pkt, r int64) (rejected, meanErr, medErr float64, valid int) {
	o := run(ps)
	o.Finish()
	var errs []float64
	var n, al int
	for _, s := range o.Samples {
		if s.Kind != Full || s.Flag == FirstEdge {
			continue
		}
		n++
		if s.Flag == AppLimited {
			al++
		}
		if s.Flag == Valid {
			e := float64(s.RTT-r) / float64(r) * 100
			errs = append(errs, max(e, -e))
		}
	}
	if n == 0 || len(errs) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(errs)
	var sum float64
	for _, e := range errs {
		sum += e
	}
	return float64(al) / float64(n), sum / float64(len(errs)), errs[len(errs)/2], len(errs)
}

// TestAppLimitedFilterValue measures what the app-limited test buys against
// the known RTT: on a steady flow with 3 % loss and a sparse direction (a
// packet every 7 ms at 25 ms RTT, gaps above RTT/4) it must reject almost
// nothing; on a flow whose sender pauses before reflecting (every 10th
// period, 8 ms late) it must remove the late samples.
func TestAppLimitedFilterValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	w := wave{r: 25 * ms, side: 10 * ms, gap: ms / 4, dur: 5000 * ms}
	var steady []pkt
	for _, p := range w.packets() {
		if rng.IntN(33) == 0 || p.dir == 1 && p.t%(7*ms) >= w.gap {
			continue
		}
		steady = append(steady, p)
	}
	rej, mean, med, n := appLimitedRun(steady, w.r)
	t.Logf("steady, 3%% loss, sparse down: %.1f%% app-limited, valid full samples %d, mean |e| %.2f%%, median %.2f%%", 100*rej, n, mean, med)
	if rej > 0.05 {
		t.Errorf("steady flow: %.0f%% of samples rejected as app-limited", 100*rej)
	}

	// The server is silent for 8 ms before every 10th reflection, which it
	// then sends late: those edges are seen 8 ms late.
	pw := wave{r: 25 * ms, side: 10 * ms, gap: ms / 4, dur: 5000 * ms}
	up := pw.edges(0)
	var paused []pkt
	for _, p := range pw.packets() {
		if p.dir == 1 {
			k, _ := slices.BinarySearch(up, p.t-pw.side+1)
			k-- // the up edge this down packet's period started with
			if k >= 0 && k%10 == 5 && p.t >= up[k]+pw.side && p.t < up[k]+pw.side+8*ms {
				continue
			}
		}
		paused = append(paused, p)
	}
	rej, mean, med, n = appLimitedRun(paused, pw.r)
	t.Logf("sender pauses 8 ms every 10th period: %.1f%% app-limited, valid full samples %d, mean |e| %.2f%%, median %.2f%%", 100*rej, n, mean, med)
	if rej < 0.05 || mean > 2 {
		t.Errorf("paused sender: %.0f%% rejected, mean |e| %.2f%%", 100*rej, mean)
	}
}
