package alert

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/query"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Replay bounds.
const (
	// MaxReplayNs is the longest range replayed (a year).
	MaxReplayNs = int64(366 * 24 * 3600 * 1e9)
	// replayChunkNs is the span of probes read, sorted and fed at once
	// (5 min × 32 streams × 100/s ≈ 1 M samples at most).
	replayChunkNs   = int64(5 * 60 * 1e9)
	maxReplayEvents = 100_000
	// maxReplayChanges bounds the changes listed (a flapping rule).
	maxReplayChanges = 100_000
)

// ReplayRequest asks what the rules would have done over stored history.
type ReplayRequest struct {
	Name         string // the monitor ("" the store's only one)
	FromNs, ToNs int64
	Rules        []Rule // checked (Config.Check)
}

// ReplayResult is what Replay found.
type ReplayResult struct {
	Monitor string `json:"monitor"`
	FromNs  int64  `json:"from_ns"`
	ToNs    int64  `json:"to_ns"`
	Rules   []Rule `json:"rules"`
	Probes  uint64 `json:"probes"`
	// Changes are the alerts' firings and resolutions in time order.
	Changes []Alert `json:"changes"`
	// Firing are the alerts still firing at the end of the range.
	Firing    []Alert `json:"firing"`
	Truncated bool    `json:"truncated,omitempty"` // more than 100,000 changes
}

// Replay evaluates rules over a monitor's stored probes and events as
// the daemon would have: probes in send order, an evaluation each second
// of probes (a gap without probes, the daemon stopped, is skipped), each
// stored baseline step and loaded episode fed at its end (when the daemon
// wrote it). It reads only.
func Replay(ctx context.Context, st store.Monitors, req ReplayRequest) (*ReplayResult, error) {
	if req.ToNs <= req.FromNs || req.ToNs-req.FromNs > MaxReplayNs {
		return nil, fmt.Errorf("alerts replay: the range must be positive and at most 366 days")
	}
	name, mid, err := query.FindMonitor(ctx, st, req.Name)
	if err != nil {
		return nil, err
	}
	streams, index, err := query.Streams(ctx, st, name, mid)
	if err != nil {
		return nil, err
	}
	e, err := NewEvaluator(req.Rules, name, streams)
	if err != nil {
		return nil, err
	}
	stored, err := st.Events(ctx, mid, req.FromNs, req.ToNs, maxReplayEvents)
	if err != nil {
		return nil, err
	}
	var evs []model.MonitorEvent
	for _, ev := range stored {
		if ev.Kind != model.EventBaselineStep && ev.Kind != model.EventLoaded {
			continue
		}
		i, ok := index[ev.Stream]
		if !ok {
			continue
		}
		ev.Stream = i
		evs = append(evs, ev)
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].EndNs < evs[b].EndNs })

	res := &ReplayResult{Monitor: name, FromNs: req.FromNs, ToNs: req.ToNs, Rules: req.Rules, Changes: []Alert{}}
	const sec = int64(1e9)
	next := int64(0) // the next evaluation time; 0: none yet
	eval := func(at int64) {
		for len(evs) > 0 && evs[0].EndNs <= at {
			e.Event(evs[0], evs[0].EndNs)
			evs = evs[1:]
		}
		for _, a := range e.Eval(at) {
			if len(res.Changes) >= maxReplayChanges {
				res.Truncated = true
				return
			}
			res.Changes = append(res.Changes, a)
		}
	}
	var buf []model.ProbeSample
	for from := req.FromNs; from < req.ToNs; from += replayChunkNs {
		to := min(from+replayChunkNs, req.ToNs)
		buf = buf[:0]
		err := st.Probes(ctx, mid, from, to, func(p model.ProbeSample) error {
			i, ok := index[p.Stream]
			if !ok {
				return fmt.Errorf("a probe of stream %d, which monitor %q does not list", p.Stream, name)
			}
			p.Stream = i
			buf = append(buf, p)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("monitor %q: %w", name, err)
		}
		slices.SortStableFunc(buf, func(a, b model.ProbeSample) int {
			return int(min(max(a.SentNs-b.SentNs, -1), 1))
		})
		for _, s := range buf {
			if next != 0 && s.SentNs >= next {
				eval(next)
				// Skip a gap without probes: nothing to evaluate in it.
				next = max(next+sec, units.FloorDiv(s.SentNs, sec)*sec+sec)
			}
			if next == 0 {
				next = units.FloorDiv(s.SentNs, sec)*sec + sec
			}
			e.Add(s)
			res.Probes++
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if next != 0 {
		eval(min(next, req.ToNs))
	}
	eval(req.ToNs)
	res.Firing = e.Firing()
	if res.Firing == nil {
		res.Firing = []Alert{}
	}
	return res, nil
}
