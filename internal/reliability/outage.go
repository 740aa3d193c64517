package reliability

import (
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// lossRun is a run of consecutive failed probes of one stream: from the
// first lost probe's send to the next answered probe's send, so its
// duration is within one probe interval of the real outage.
type lossRun struct {
	start, end int64
	n          int
	open       bool // still running at the end of the range
}

func (a *Analyzer) outageStep(st *streamAcc, s model.ProbeSample) {
	if failed(s) {
		if st.run.n == 0 {
			st.run.start = s.SentNs
		}
		st.run.n++
		return
	}
	if st.run.n > 0 {
		st.run.end = s.SentNs
		if a.isOutage(st.run) {
			st.runs = append(st.runs, st.run)
		}
		st.run = lossRun{}
	}
}

func (a *Analyzer) isOutage(r lossRun) bool {
	return r.n >= a.cfg.Outage.MinProbes && r.end-r.start >= a.cfg.Outage.MinNs
}

type interval struct{ start, end int64 }

// intersect is the intersection of two sorted, disjoint interval lists.
func intersect(x, y []interval) []interval {
	var out []interval
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		s, e := max(x[i].start, y[j].start), min(x[i].end, y[j].end)
		if s < e {
			out = append(out, interval{s, e})
		}
		if x[i].end < y[j].end {
			i++
		} else {
			j++
		}
	}
	return out
}

func overlaps(iv interval, list []interval) bool {
	for _, o := range list {
		if iv.start < o.end && o.start < iv.end {
			return true
		}
	}
	return false
}

// outages turns each stream's loss runs into events with their scope:
// when every stream of every target (two or more targets) was down at
// once it is the link's outage (Stream −1); when every stream of one
// target was, the target's; else the stream's alone (e.g. ICMP filtered).
// A narrower event overlapping a wider one is not listed again.
func (a *Analyzer) outages(toNs int64) []model.MonitorEvent {
	per := make([][]lossRun, len(a.streams))
	ivs := make([][]interval, len(a.streams))
	for i, st := range a.st {
		if st == nil {
			continue
		}
		runs := st.runs
		if st.run.n > 0 {
			r := st.run
			r.end, r.open = max(toNs, st.lastSent+a.cfg.ProbeIntervalNs), true
			if a.isOutage(r) {
				runs = append(runs, r)
			}
		}
		per[i] = runs
		for _, r := range runs {
			ivs[i] = append(ivs[i], interval{r.start, r.end})
		}
	}
	lostIn := func(streams []int, iv interval) (n int, open bool) {
		for _, s := range streams {
			for _, r := range per[s] {
				if r.start < iv.end && iv.start < r.end {
					n += r.n
					open = open || (r.open && r.end == iv.end)
				}
			}
		}
		return n, open
	}
	// Streams by target, in first-seen order; only streams that probed.
	var targets []string
	byTarget := map[string][]int{}
	for i, s := range a.streams {
		if i >= len(a.st) || a.st[i] == nil || !a.st[i].hasSent {
			continue
		}
		if _, ok := byTarget[s.Target]; !ok {
			targets = append(targets, s.Target)
		}
		byTarget[s.Target] = append(byTarget[s.Target], i)
	}
	var evs []model.MonitorEvent
	mk := func(scope string, stream int32, streams []int, iv interval, what string) {
		n, open := lostIn(streams, iv)
		ev := model.MonitorEvent{
			Kind: model.EventOutage, StartNs: iv.start, EndNs: iv.end, Stream: stream,
			Detail: map[string]float64{"duration_s": float64(iv.end-iv.start) / 1e9, "probes_lost": float64(n), "streams": float64(len(streams))},
			Flags:  []string{scope},
		}
		if open {
			ev.Flags = append(ev.Flags, "open")
		}
		ev.Text = fmt.Sprintf("outage of %s: %v, %d probes lost", what, time.Duration(iv.end-iv.start).Round(time.Millisecond), n)
		evs = append(evs, ev)
	}
	targetIv := map[string][]interval{}
	for _, t := range targets {
		ss := byTarget[t]
		iv := ivs[ss[0]]
		for _, s := range ss[1:] {
			iv = intersect(iv, ivs[s])
		}
		targetIv[t] = iv
	}
	var link []interval
	if len(targets) >= 2 {
		link = targetIv[targets[0]]
		for _, t := range targets[1:] {
			link = intersect(link, targetIv[t])
		}
		var all []int
		for _, t := range targets {
			all = append(all, byTarget[t]...)
		}
		for _, iv := range link {
			mk("link", -1, all, iv, fmt.Sprintf("the link (all %d targets)", len(targets)))
		}
	}
	for _, t := range targets {
		for _, iv := range targetIv[t] {
			if !overlaps(iv, link) {
				mk("target", int32(byTarget[t][0]), byTarget[t], iv, "target "+t)
			}
		}
		for _, s := range byTarget[t] {
			for _, iv := range ivs[s] {
				if !overlaps(iv, link) && !overlaps(iv, targetIv[t]) {
					mk("stream", int32(s), []int{s}, iv, "stream "+a.streams[s].Name)
				}
			}
		}
	}
	return evs
}
