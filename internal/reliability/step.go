package reliability

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// steps finds baseline steps on one stream: a change point of the
// per-minute p5 RTT (the low percentile follows the path's base delay and
// ignores queueing). At a candidate minute the median of the next
// PersistMinutes usable minutes differs from the median of the previous
// PersistMinutes by at least max(MinNs, Rel × before), and every minute on
// each side lies on its own side of the midpoint (the shift persists, it
// is not one noisy minute). Minutes disturbed by an outage (≥ 10 % loss,
// or overlapping a loss run) and the minute after one are skipped: the
// transients around an outage are not a level. A step within tolerance of
// a multiple of the probe interval is flagged "probable-artefact": seed
// 001's tool mis-matched replies after outages and showed fake 100 ms
// steps; one right after an outage is also flagged "after-outage".
func (a *Analyzer) steps(i int32, st *streamAcc) []model.MonitorEvent {
	type pt struct {
		ns, p5      int64
		afterOutage bool
	}
	var pts []pt
	disturbed := func(m minuteRec) bool {
		if uint64(m.lost)*10 >= uint64(m.sent) {
			return true
		}
		for _, r := range st.runs {
			if r.start < m.ns+MinuteNs && m.ns < r.end {
				return true
			}
		}
		return false
	}
	prevBad := false
	sawBad := false
	for _, m := range st.minutes {
		bad := disturbed(m)
		if !bad && !prevBad && m.p5 >= 0 {
			pts = append(pts, pt{m.ns, m.p5, sawBad})
			sawBad = false
		}
		if bad {
			sawBad = true
		}
		prevBad = bad
	}
	n := a.cfg.Step.PersistMinutes
	var evs []model.MonitorEvent
	vals := func(ps []pt) []int64 {
		v := make([]int64, len(ps))
		for k, p := range ps {
			v[k] = p.p5
		}
		slices.Sort(v)
		return v
	}
	for k := n; k+n <= len(pts); k++ {
		bv, av := vals(pts[k-n:k]), vals(pts[k:k+n])
		before, after := median(bv), median(av)
		d := after - before
		thr := max(a.cfg.Step.MinNs, int64(a.cfg.Step.Rel*float64(before)))
		if abs(d) < thr {
			continue
		}
		mid := (before + after) / 2
		// Persistence: both sides entirely on their own side of the midpoint.
		if d > 0 && (bv[len(bv)-1] >= mid || av[0] <= mid) || d < 0 && (bv[0] <= mid || av[len(av)-1] >= mid) {
			continue
		}
		ev := model.MonitorEvent{
			Kind: model.EventBaselineStep, StartNs: pts[k].ns, EndNs: pts[k+n-1].ns + MinuteNs, Stream: i,
			Detail: map[string]float64{"before_ms": float64(before) / 1e6, "after_ms": float64(after) / 1e6, "step_ms": float64(d) / 1e6},
			Text:   fmt.Sprintf("baseline step of %+.1f ms on %s (p5 %.1f → %.1f ms)", float64(d)/1e6, a.streams[i].Name, float64(before)/1e6, float64(after)/1e6),
		}
		iv := a.cfg.ProbeIntervalNs
		if m := math.Round(float64(abs(d)) / float64(iv)); m >= 1 && abs(abs(d)-int64(m)*iv) <= a.cfg.Step.ArtefactTolNs {
			ev.Flags = append(ev.Flags, "probable-artefact")
			ev.Text += fmt.Sprintf(": %g× the %v probe interval, probably replies matched to the wrong probe", m, time.Duration(iv))
		}
		for _, p := range pts[k-1 : k+1] {
			if p.afterOutage {
				ev.Flags = append(ev.Flags, "after-outage")
				break
			}
		}
		evs = append(evs, ev)
		k += n - 1
	}
	return evs
}

func median(sorted []int64) int64 { return nearestRank(sorted, 0.5) }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
