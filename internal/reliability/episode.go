package reliability

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sonde-project/sonde/internal/grade"
	"github.com/sonde-project/sonde/internal/model"
)

// episode is a loaded episode of one stream being collected: a run of
// probes sent in a saturated load state (or, without load labels, with
// elevated delay), runs closer than GapNs joined.
type episode struct {
	start, lastLoaded, firstAfter int64
	states                        [len(model.LoadStates)]int
	seq                           []int64 // RTT per probe in order, −1 lost
	n, lost                       int
	truncated                     bool
}

func (a *Analyzer) loaded(st *streamAcc, s model.ProbeSample) bool {
	switch s.Load {
	case model.LoadUp, model.LoadDown, model.LoadBoth:
		return true
	case model.LoadIdle, model.LoadLoaded:
		// The counters say no direction is saturated: whatever delay the
		// probe met, it is not a saturated episode.
		return false
	}
	if st.baseRef == 0 {
		return false
	}
	if failed(s) {
		// A loss inside an elevated run belongs to it (drop-tail drops at
		// the peak).
		return st.ep != nil && st.ep.firstAfter == 0
	}
	return s.RTTNs > st.baseRef+a.cfg.Loaded.ElevatedNs
}

func (a *Analyzer) episodeStep(st *streamAcc, s model.ProbeSample) {
	ep := st.ep
	if ep != nil && ep.firstAfter != 0 && s.SentNs-ep.lastLoaded > a.cfg.Loaded.GapNs {
		a.closeEpisode(st)
		ep = nil
	}
	if !a.loaded(st, s) {
		if ep != nil && ep.firstAfter == 0 {
			ep.firstAfter = s.SentNs
		}
		return
	}
	if ep == nil {
		ep = &episode{start: s.SentNs}
		st.ep = ep
	}
	ep.lastLoaded, ep.firstAfter = s.SentNs, 0
	ep.states[loadIndex(s.Load)]++
	ep.n++
	v := s.RTTNs
	if failed(s) {
		v = -1
		ep.lost++
	}
	if st.epKept < a.cfg.Loaded.MaxSamples {
		ep.seq = append(ep.seq, v)
		st.epKept++
	} else {
		ep.truncated = true
	}
}

func (a *Analyzer) closeEpisode(st *streamAcc) {
	ep := st.ep
	st.ep = nil
	if ep.firstAfter == 0 {
		ep.firstAfter = ep.lastLoaded + a.cfg.ProbeIntervalNs
	}
	if ep.firstAfter-ep.start < a.cfg.Loaded.MinNs {
		st.epKept -= len(ep.seq)
		return
	}
	st.episodes = append(st.episodes, ep)
}

// Queue classes of a loaded episode.
const (
	QueueDropTail = "drop-tail" // deep delay, probe losses at the delay peaks
	QueueAQM      = "aqm"       // bounded added delay under load
	QueueFQ       = "fq"        // probes barely delayed while the load runs
	QueueBloated  = "bloated"   // deep delay, but no probe loss at the peaks to confirm drop-tail
)

func (a *Analyzer) episodeEvents(i int32, st *streamAcc) []model.MonitorEvent {
	if st.ep != nil {
		a.closeEpisode(st)
	}
	base := a.baseline(st)
	var evs []model.MonitorEvent
	for _, ep := range st.episodes {
		evs = append(evs, a.episodeEvent(i, ep, base))
	}
	return evs
}

// episodeEvent computes an episode's figures. The added delay is the
// loaded median (and p95, p99) minus the idle baseline; the grade is
// that of the added median. The inferred buffer uses the loaded p99, not
// the median: under a CUBIC sawtooth the queue spends most of its time
// below the ceiling, so the median reads ~15 % low, while the p99 sits at
// the ceiling the buffer sets (an earlier attempt measured 300 kbit for a
// 301 kbit buffer this way).
func (a *Analyzer) episodeEvent(i int32, ep *episode, base int64) model.MonitorEvent {
	state := model.LoadUnknown
	for _, s := range []model.LoadState{model.LoadUp, model.LoadDown, model.LoadBoth} {
		if ep.states[s] > ep.states[state] {
			state = s
		}
	}
	ev := model.MonitorEvent{Kind: model.EventLoaded, StartNs: ep.start, EndNs: ep.firstAfter, Stream: i,
		Detail: map[string]float64{"probes": float64(ep.n), "probes_lost": float64(ep.lost), "idle_ms": float64(base) / 1e6}}
	dir := "elevated-delay"
	if state != model.LoadUnknown {
		dir = state.String()
	}
	ev.Flags = append(ev.Flags, dir)
	var rtts []int64
	for _, v := range ep.seq {
		if v >= 0 {
			rtts = append(rtts, v)
		}
	}
	if len(rtts) == 0 || ep.truncated {
		ev.Flags = append(ev.Flags, "no-figures")
		ev.Text = fmt.Sprintf("loaded episode (%s) on %s: %v, %d probes, %d lost", dir, a.streams[i].Name,
			time.Duration(ep.firstAfter-ep.start).Round(time.Millisecond), ep.n, ep.lost)
		return ev
	}
	slices.Sort(rtts)
	p50, p75, p95, p99 := nearestRank(rtts, 0.5), nearestRank(rtts, 0.75), nearestRank(rtts, 0.95), nearestRank(rtts, 0.99)
	add50, add95, add99 := p50-base, p95-base, p99-base
	d := ev.Detail
	d["loaded_median_ms"], d["loaded_p99_ms"] = float64(p50)/1e6, float64(p99)/1e6
	d["added_median_ms"], d["added_p95_ms"], d["added_p99_ms"] = float64(add50)/1e6, float64(add95)/1e6, float64(add99)/1e6
	letter := grade.BufferbloatOf(add50)
	// Losses at the peaks: the share of lost probes whose last answered
	// predecessor was in the episode's top quarter of delay. Drop-tail
	// drops only when the buffer is full, i.e. at the sawtooth's top;
	// losses spread at random would give about 0.25.
	atPeak, lossesJudged := 0, 0
	prev := int64(-1)
	for _, v := range ep.seq {
		if v >= 0 {
			prev = v
			continue
		}
		if prev >= 0 {
			lossesJudged++
			if prev >= p75 {
				atPeak++
			}
		}
	}
	// The sawtooth: a sender backing off after a loss at the full buffer
	// drains it by a good share at line rate (CUBIC by 30 %: 130 ms of a
	// 430 ms buffer in 130 ms), so the delay falls by at least a fifth of
	// the added p99 between two answers, where it rose by a few ms per
	// answer. This confirms drop-tail when the probes are not lost at the
	// peaks: a byte-limited buffer (Linux bfifo, the lab's limit=301kbit)
	// that refuses a 1500-byte segment still admits a 72-byte probe (the
	// adsl lab: 0 of 210 probes lost in a 20 s upload).
	falls := 0
	prev = -1
	for _, v := range ep.seq {
		if v < 0 {
			continue
		}
		if prev >= 0 && add99 > 0 && prev-v >= add99/5 {
			falls++
		}
		prev = v
	}
	d["sawtooth_falls"] = float64(falls)
	peakShare := 0.0
	if lossesJudged > 0 {
		peakShare = float64(atPeak) / float64(lossesJudged)
		d["loss_at_peak_share"] = peakShare
	}
	c := a.capacity(state, ep.start)
	// No queue discipline pre-empts the packet in service: a probe may
	// wait one MTU's serialisation behind it even in an empty flow queue
	// (17 ms at 0.7 Mbit/s), and CoDel does not drop while it holds one
	// MTU or less (RFC 8289's maxpacket), so on a slow link its standing
	// queue sits a further MTU time above its target. Measured on the adsl
	// lab (test/monitor): FQ-CoDel added p95 16.6 ms, CoDel 65.8 ms, over
	// the fixed 10 and 50 ms bounds. With the capacity known, the bounds
	// grow by one and two MTU times (0.24 ms at 100 Mbit/s: no change on
	// fast links).
	fqMax, aqmMax := a.cfg.Loaded.FQMaxNs, a.cfg.Loaded.AQMMaxNs
	if c > 0 {
		mtuNs := int64(float64(a.cfg.Loaded.MTUBytes*8) / c * 1e9)
		fqMax += mtuNs
		aqmMax += 2 * mtuNs
	}
	var class string
	switch {
	case add95 < fqMax:
		class = QueueFQ
	case add95 < aqmMax:
		class = QueueAQM
	case lossesJudged > 0 && peakShare >= 0.5, falls >= 2:
		class = QueueDropTail
	default:
		class = QueueBloated
	}
	ev.Flags = append(ev.Flags, "queue="+class, "grade="+letter)
	ev.Text = fmt.Sprintf("loaded episode (%s) on %s: %v, added delay %.0f ms median, %.0f ms p99, grade %s, queue %s",
		dir, a.streams[i].Name, time.Duration(ep.firstAfter-ep.start).Round(time.Millisecond), float64(add50)/1e6, float64(add99)/1e6, letter, class)
	if c > 0 && base > 0 {
		buf := c * float64(max(add99, 0)) / 1e9
		bdp := c * float64(base) / 1e9
		d["capacity_bps"], d["buffer_bits"], d["bdp_bits"], d["oversize"] = c, buf, bdp, buf/bdp
		ev.Text += fmt.Sprintf(", buffer ≈ %.0f kbit = %.1f× BDP", buf/1e3, buf/bdp)
	}
	return ev
}

// capacity is the link's capacity in the direction state loads at time
// t: from the span holding t, else the configured one (0: unknown).
func (a *Analyzer) capacity(state model.LoadState, t int64) float64 {
	up, down := a.cfg.Loaded.UpBps, a.cfg.Loaded.DownBps
	spans := a.cfg.Loaded.Capacities
	if i := sort.Search(len(spans), func(i int) bool { return spans[i].FromNs > t }); i > 0 {
		up, down = spans[i-1].UpBps, spans[i-1].DownBps
	}
	switch state {
	case model.LoadUp:
		return up
	case model.LoadDown:
		return down
	}
	return 0
}
