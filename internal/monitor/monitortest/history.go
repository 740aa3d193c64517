// Package monitortest writes a monitor's synthetic history into a store
// through the store's API (store.Monitors), the rows a daemon would have
// written: per-minute rollups, raw probes too for the newest hours, stored outages, loaded episodes, a restart after a gap.
// The dashboard's tests and its browser test read it back.
package monitortest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/sonde-project/sonde/internal/grade"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

const (
	minuteNs = reliability.MinuteNs
	hourNs   = 60 * minuteNs
	dayNs    = 24 * hourNs
)

// History describes what Fill writes.
type History struct {
	Name    string                // the monitor
	Labels  map[string]string     // its labels (the fleet's groups)
	Streams []model.MonitorStream // registered in this order
	// FromNs, ToNs: the span written; probes at 1 per second per stream.
	FromNs, ToNs int64
	// RawNs: the last RawNs of the span are also kept as raw probes;
	// every minute has its rollup.
	RawNs int64
	Seed  uint64
}

// Written says where Fill put its features, for tests to find them.
type Written struct {
	Probes, Rollups int
	// OutageNs is a 5-minute outage of every stream (100 % loss) two days
	// before the end; GapFromNs, GapToNs a gap without rows (the daemon
	// down) three days before, closed by a restart.
	OutageNs, GapFromNs, GapToNs int64
	Events                       []model.MonitorEvent
}

// Fill writes h into st. The shape, per stream: a base RTT of 12 ms (18
// ms from four days before the end: a baseline step), a daily swell in
// the evening, 1 to 3 ms of jitter, 0.2 % loss; every day a 20-minute
// download-saturated episode at 20:00 UTC (+90 ms) and a 10-minute
// upload-saturated one at 08:00 (+180 ms), the hour after each loaded
// but not saturated (+8 ms).
func Fill(ctx context.Context, st store.Monitors, h History) (Written, error) {
	var w Written
	if h.ToNs <= h.FromNs || len(h.Streams) == 0 {
		return w, fmt.Errorf("monitortest: empty history")
	}
	mid, err := st.Monitor(ctx, store.Identity{Name: h.Name, Labels: h.Labels})
	if err != nil {
		return w, err
	}
	if _, err := st.Streams(ctx, mid, h.Streams); err != nil {
		return w, err
	}
	from := h.FromNs / minuteNs * minuteNs
	to := h.ToNs / 1e9 * 1e9
	rawFrom := max(from, (to-h.RawNs)/minuteNs*minuteNs)
	w.OutageNs = (to-2*dayNs)/minuteNs*minuteNs + 3*hourNs
	w.GapFromNs = (to-3*dayNs)/hourNs*hourNs + 12*hourNs
	w.GapToNs = w.GapFromNs + 2*hourNs
	stepNs := to - 4*dayNs
	rng := rand.New(rand.NewPCG(h.Seed, 1))

	b := &store.Batch{}
	flush := func() error {
		if b.Rows() == 0 {
			return nil
		}
		err := st.Write(ctx, mid, b)
		*b = store.Batch{}
		return err
	}
	var rollErr error
	roller := reliability.NewRoller(reliability.Defaults().ThresholdsNs, func(m model.MonitorRollup) {
		r, err := store.RollupFrom(m)
		if err != nil && rollErr == nil {
			rollErr = err
		}
		b.Rollups = append(b.Rollups, r)
		w.Rollups++
	})
	seq := make([]uint32, len(h.Streams))
	for t := from; t < to; t += 1e9 {
		if t >= w.GapFromNs && t < w.GapToNs {
			continue
		}
		for i := range h.Streams {
			p := probeAt(rng, int32(i), seq[i], t, stepNs, w.OutageNs)
			seq[i]++
			// Every minute is rolled up, as the daemon does; the newest
			// are kept raw as well.
			if err := roller.Add(p); err != nil {
				return w, err
			}
			if t >= rawFrom {
				b.Probes = append(b.Probes, p)
				w.Probes++
			}
		}
		if b.Rows() >= 20_000 {
			if err := flush(); err != nil {
				return w, err
			}
		}
	}
	roller.Flush()
	if rollErr != nil {
		return w, rollErr
	}
	// Stored events where the rows are rollups (the analysis finds those
	// of the raw part itself): the outage, each day's loaded episodes.
	if w.OutageNs < rawFrom {
		w.Events = append(w.Events, model.MonitorEvent{Kind: model.EventOutage, StartNs: w.OutageNs, EndNs: w.OutageNs + 5*minuteNs, Stream: -1,
			Text:   "link outage: every probe of every target lost for 5m0s",
			Detail: map[string]float64{"duration_s": 300, "probes_lost": float64(300 * len(h.Streams)), "streams": float64(len(h.Streams))}},
			// The daemon's stored alert change (monitor.EventAlert) for it.
			model.MonitorEvent{Kind: "alert", StartNs: w.OutageNs + 10e9, EndNs: w.OutageNs + 5*minuteNs, Stream: -1,
				Text:  "RESOLVED link-outage [critical]: every probe of every target lost",
				Flags: []string{"status=resolved", "rule=link-outage", "severity=critical"}})
	}
	for d := from / dayNs * dayNs; d < rawFrom; d += dayNs {
		for _, ep := range episodes {
			s := d + ep.atNs
			if s < from || s+ep.lenNs > rawFrom || (s+ep.lenNs > w.GapFromNs && s < w.GapToNs) {
				continue
			}
			base := 12.0
			if s >= stepNs {
				base = 18
			}
			add := float64(ep.addNs) / 1e6
			grade := grade.BufferbloatOf(ep.addNs)
			buf := ep.capBps * (add + 6) / 1e3
			bdp := ep.capBps * base / 1e3
			for i, sm := range h.Streams {
				w.Events = append(w.Events, model.MonitorEvent{Kind: model.EventLoaded, StartNs: s, EndNs: s + ep.lenNs, Stream: int32(i),
					Text: fmt.Sprintf("loaded episode (%s) on %s: %v, added delay %.0f ms median, %.0f ms p99, grade %s, queue drop-tail, buffer ≈ %.0f kbit = %.1f× BDP",
						ep.state, sm.Name, time.Duration(ep.lenNs), add, add+6, grade, buf/1e3, buf/bdp),
					Detail: map[string]float64{"probes": float64(ep.lenNs / 1e9), "probes_lost": 0, "idle_ms": base, "added_median_ms": add,
						"added_p95_ms": add + 4, "added_p99_ms": add + 6, "capacity_bps": ep.capBps, "buffer_bits": buf, "bdp_bits": bdp, "oversize": buf / bdp},
					Flags: []string{ep.state.String(), "queue=drop-tail", "grade=" + grade}})
			}
		}
	}
	b.Events = append(b.Events, w.Events...)
	if err := flush(); err != nil {
		return w, err
	}
	if err := st.Restart(ctx, mid, store.RestartRow{TimeNs: w.GapToNs, LastNs: w.GapFromNs - 1e9, Version: "monitortest"}); err != nil {
		return w, err
	}
	return w, nil
}

type episode struct {
	atNs, lenNs, addNs int64
	state              model.LoadState
	capBps             float64
}

var episodes = []episode{
	{atNs: 20 * hourNs, lenNs: 20 * minuteNs, addNs: 90e6, state: model.LoadDown, capBps: 100e6},
	{atNs: 8 * hourNs, lenNs: 10 * minuteNs, addNs: 180e6, state: model.LoadUp, capBps: 20e6},
}

// probeAt is stream i's probe sent at t.
func probeAt(rng *rand.Rand, i int32, seq uint32, t, stepNs, outageNs int64) model.ProbeSample {
	p := model.ProbeSample{Stream: i, Seq: seq, SentNs: t, Load: model.LoadIdle}
	if t >= outageNs && t < outageNs+5*minuteNs || rng.Float64() < 0.002 {
		p.RTTNs, p.Lost = -1, true
		return p
	}
	base := 12e6 + float64(i)*3e6
	if t >= stepNs {
		base += 6e6
	}
	tod := t % dayNs
	base += 4e6 * math.Max(0, math.Sin(float64(tod-14*hourNs)/float64(10*hourNs)*math.Pi)) // the evening swell
	for _, ep := range episodes {
		switch {
		case tod >= ep.atNs && tod < ep.atNs+ep.lenNs:
			base += float64(ep.addNs) * (0.6 + 0.4*rng.Float64())
			p.Load = ep.state
		case tod >= ep.atNs+ep.lenNs && tod < ep.atNs+ep.lenNs+hourNs:
			base += 8e6 * rng.Float64()
			p.Load = model.LoadLoaded
		}
	}
	p.RTTNs = int64(base + 1e6 + 2e6*rng.ExpFloat64()/3)
	return p
}
