package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sonde-project/sonde/internal/grade"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Bounds and defaults of a request (flags supply them).
const (
	// MaxRangeNs is the longest range a report covers (10 years).
	MaxRangeNs = int64(10 * 366 * 24 * 3600e9)
	// DefaultUpstreamMin, DefaultUpstreamShare: the grouping rule's
	// defaults (3 monitors at once, or half of a label group).
	DefaultUpstreamMin   = 3
	DefaultUpstreamShare = 0.5
	// MaxUpstreamMin bounds --upstream-min.
	MaxUpstreamMin = 100_000
	// DefaultMinWindowProbes: an hour with fewer probes is not judged.
	DefaultMinWindowProbes = 10
	// MaxOutagesListed bounds the outages listed per monitor (all are
	// counted).
	MaxOutagesListed = 200
	// maxCells bounds monitors × windows × (1 + profiles), the counters
	// a report holds (8 bytes each): past it the window is a day, and
	// past it with days the request is refused.
	maxCells = 60_000_000
	dayNs    = 24 * store.HourNs
	// reportReaders read the store at once, over disjoint monitors.
	reportReaders = 2
)

// Request is one fleet report's question.
type Request struct {
	FromNs, ToNs int64
	Filter       Filter
	// Profiles to judge; nil: the smart-grid table (reliability.SmartGrid).
	Profiles        []model.RequirementProfile
	UpstreamMin     int     // 0: DefaultUpstreamMin
	UpstreamShare   float64 // 0: DefaultUpstreamShare
	MinWindowProbes uint64  // 0: DefaultMinWindowProbes
}

func (r *Request) fill() error {
	if r.ToNs <= r.FromNs {
		return fmt.Errorf("fleet: the range ends (%d ns) before it starts (%d ns)", r.ToNs, r.FromNs)
	}
	if r.ToNs-r.FromNs > MaxRangeNs {
		return fmt.Errorf("fleet: a range of %.0f days: at most 10 years", float64(r.ToNs-r.FromNs)/float64(dayNs))
	}
	if r.Profiles == nil {
		r.Profiles = reliability.SmartGrid()
	}
	if _, err := reliability.New(reliability.Config{Profiles: r.Profiles}, nil); err != nil {
		return err
	}
	if r.UpstreamMin == 0 {
		r.UpstreamMin = DefaultUpstreamMin
	}
	if r.UpstreamShare == 0 {
		r.UpstreamShare = DefaultUpstreamShare
	}
	if r.MinWindowProbes == 0 {
		r.MinWindowProbes = DefaultMinWindowProbes
	}
	if r.UpstreamMin < 2 || r.UpstreamMin > MaxUpstreamMin {
		return fmt.Errorf("fleet: upstream minimum of %d monitors: want 2 to %d", r.UpstreamMin, MaxUpstreamMin)
	}
	if !(r.UpstreamShare > 0 && r.UpstreamShare <= 1) {
		return fmt.Errorf("fleet: upstream share %g: want a fraction in (0, 1]", r.UpstreamShare)
	}
	return nil
}

// Check validates a request as Report will (for usage errors before the
// store is opened).
func (r Request) Check() error { return r.fill() }

// monAcc sums one monitor's units.
type monAcc struct {
	m                store.FleetMonitor
	sent, lost, late uint64
	answered         uint64
	sum, sumSq       float64
	min, max         int64
	bins             []uint64
	ok               []uint64 // per profile
	approx           []bool
	cellSent         []uint64 // per window
	cellOK           []uint64 // per window × profile
}

// Report reads the monitors chosen by req.Filter from st and assembles
// the fleet report. A store without monitors (or none matching) gives a
// report without monitors that says so.
func Report(ctx context.Context, st store.FleetReader, req Request) (*model.FleetReport, error) {
	if err := req.fill(); err != nil {
		return nil, err
	}
	rep := &model.FleetReport{Schema: model.FleetSchema, FromNs: req.FromNs, ToNs: req.ToNs, Filter: req.Filter.String(),
		Profiles: req.Profiles, UpstreamMin: req.UpstreamMin, UpstreamShare: req.UpstreamShare, Monitors: []model.FleetMonitor{}}
	all, err := st.FleetMonitors(ctx)
	if err != nil {
		return nil, err
	}
	var mons []*monAcc
	bySid := map[int32]*monAcc{}
	idx := map[int64]int{}
	for _, m := range all {
		if !req.Filter.Match(m.Labels) {
			continue
		}
		a := &monAcc{m: m}
		idx[m.ID] = len(mons)
		mons = append(mons, a)
		for sid := range m.Streams {
			bySid[sid] = a
		}
	}
	switch {
	case len(all) == 0:
		rep.Notes = append(rep.Notes, "the store holds no monitor")
		rep.Source = "none"
		return rep, nil
	case len(mons) == 0:
		rep.Notes = append(rep.Notes, fmt.Sprintf("none of the store's %d monitors matches the label filter %s", len(all), req.Filter))
		rep.Source = "none"
		return rep, nil
	}
	var ids []int64
	if !req.Filter.Empty() {
		for _, a := range mons {
			ids = append(ids, a.m.ID)
		}
	}
	q := store.FleetQuery{Monitors: ids, FromNs: req.FromNs, ToNs: req.ToNs}

	// The window is the aligned UTC hour, or the day when monitors ×
	// hours would hold too many cells.
	np := len(req.Profiles)
	winNs := store.HourNs
	first := units.FloorTo(req.FromNs, winNs)
	nwin := int((req.ToNs-1-first)/winNs + 1)
	cells := func() int64 { return int64(nwin) * int64(len(mons)) * int64(1+np) }
	if cells() > maxCells {
		winNs = dayNs
		first = units.FloorTo(req.FromNs, winNs)
		nwin = int((req.ToNs-1-first)/winNs + 1)
	}
	if cells() > maxCells {
		return nil, fmt.Errorf("fleet: %d monitors × %d days × %d profiles is more than the report holds (%d counters): narrow the range, the label filter or the profiles", len(mons), nwin, np, maxCells)
	}
	add := func(sid int32, u unit) error {
		a := bySid[sid]
		if a == nil {
			return nil // a stream registered after the monitors were listed
		}
		if a.ok == nil {
			a.ok, a.approx = make([]uint64, np), make([]bool, np)
			a.cellSent, a.cellOK = make([]uint64, nwin), make([]uint64, nwin*np)
			a.bins = make([]uint64, reliability.NumBins)
		}
		a.sent += u.sent
		a.lost += u.lost
		a.late += u.late
		if n := u.answered(); n > 0 {
			if a.answered == 0 || u.minNs < a.min {
				a.min = u.minNs
			}
			if a.answered == 0 || u.maxNs > a.max {
				a.max = u.maxNs
			}
			a.answered += n
			a.sum += u.sumNs
			a.sumSq += u.sumSqNs
		}
		for _, b := range u.Bins {
			if int(b.Bin) < len(a.bins) {
				a.bins[b.Bin] += uint64(b.N)
			}
		}
		c := int((u.startNs - first) / winNs)
		if c < 0 || c >= nwin {
			return fmt.Errorf("fleet: a row of %d outside the range", u.startNs)
		}
		a.cellSent[c] += u.sent
		for p, pr := range req.Profiles {
			w, approx := u.withinAt(pr.LatencyNs)
			a.ok[p] += w
			a.approx[p] = a.approx[p] || approx
			a.cellOK[c*np+p] += w
		}
		return nil
	}
	// Readers in parallel, each over its own monitors (the decoding of
	// millions of hours is most of a month's report).
	var (
		hours, minutes atomic.Int64
		wg             sync.WaitGroup
		errs           = make([]error, reportReaders)
	)
	for k := range reportReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sq := q
			sq.Shards, sq.Shard = reportReaders, k
			var u unit // reused: decoding allocates nothing per hour
			errs[k] = st.HourRows(ctx, sq, func(h store.HourRow) error {
				hours.Add(1)
				if err := decodeHour(h, &u); err != nil {
					return err
				}
				return add(h.Stream, u)
			})
			if errs[k] != nil {
				return
			}
			errs[k] = st.MinuteRows(ctx, sq, func(r store.Rollup) error {
				minutes.Add(1)
				if r.MinuteNs < req.FromNs || r.MinuteNs >= req.ToNs {
					return nil
				}
				u, err := fromRollup(r)
				if err != nil {
					return err
				}
				return add(r.Stream, u)
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep.Source = fmt.Sprintf("%d hourly aggregates, %d minute rollups", hours.Load(), minutes.Load())
	if winNs == dayNs {
		rep.Notes = append(rep.Notes, "with this many monitors and hours the worst window is the worst aligned UTC day, not hour")
	}

	evs, err := st.FleetEvents(ctx, q, []model.EventKind{model.EventOutage, model.EventLoaded}, store.MaxListLimit)
	if err != nil {
		return nil, err
	}
	if len(evs) == store.MaxListLimit {
		rep.Notes = append(rep.Notes, fmt.Sprintf("only the first %d outages and loaded episodes are read", store.MaxListLimit))
	}

	out := make([]model.FleetMonitor, len(mons))
	var outs []outage
	outIdx := make([][]int, len(mons)) // monitor → indexes into outs
	for i, a := range mons {
		fm := model.FleetMonitor{Name: a.m.Name, Labels: a.m.Labels, Streams: len(a.m.Streams), Sent: a.sent, Lost: a.lost, Late: a.late}
		fm.RTT = delayStats(a)
		fm.Verdicts = verdicts(req, np, a.sent, a.ok, a.approx, a.cellSent, a.cellOK, first, winNs)
		out[i] = fm
	}
	for _, e := range evs {
		i, ok := idx[e.Monitor]
		if !ok {
			continue
		}
		fm := &out[i]
		switch e.Kind {
		case model.EventLoaded:
			for _, f := range e.Flags {
				if g, ok := strings.CutPrefix(f, "grade="); ok {
					if fm.Grades == nil {
						fm.Grades = map[string]int{}
					}
					fm.Grades[g]++
					if grade.BufferbloatRank(g) > grade.BufferbloatRank(fm.Worst) {
						fm.Worst = g
					}
				}
			}
		case model.EventOutage:
			scope := ""
			for _, f := range e.Flags {
				if f == "link" || f == "target" {
					scope = f
				}
			}
			if scope == "" && e.Stream < 0 {
				scope = "link"
			}
			if scope == "" {
				continue // one stream's outage (e.g. ICMP filtered) is no loss of the line
			}
			o := outage{mon: i, start: max(e.StartNs, req.FromNs), end: min(e.EndNs, req.ToNs)}
			if scope == "target" {
				o.target = mons[i].m.Streams[e.Stream].Target
			}
			outIdx[i] = append(outIdx[i], len(outs))
			outs = append(outs, o)
		}
	}
	groups := make([][]groupKey, len(mons))
	for i, a := range mons {
		for k, v := range a.m.Labels {
			groups[i] = append(groups[i], groupKey{k, v})
		}
	}
	spans := findUpstream(outs, groups, req.UpstreamMin, req.UpstreamShare)
	for k, sp := range spans {
		ev := model.FleetUpstreamEvent{StartNs: sp.start, EndNs: sp.end, Targets: sp.targets, Rule: sp.rule}
		for _, m := range sp.members {
			ev.Monitors = append(ev.Monitors, mons[m].m.Name)
		}
		rep.Upstream = append(rep.Upstream, ev)
		_ = k
	}
	for i := range mons {
		fm := &out[i]
		for _, oi := range outIdx[i] {
			o := outs[oi]
			fo := model.FleetOutage{StartNs: o.start, EndNs: o.end, Scope: "link", Target: o.target}
			if o.target != "" {
				fo.Scope = "target"
			}
			for k, sp := range spans {
				if o.start < sp.end && sp.start < o.end && slices.Contains(sp.members, i) {
					fo.Upstream = k + 1
					break
				}
			}
			secs := float64(o.end-o.start) / 1e9
			if fo.Upstream > 0 {
				fm.Up.Count++
				fm.Up.Seconds += secs
			} else {
				fm.Line.Count++
				fm.Line.Seconds += secs
			}
			if len(fm.Outages) < MaxOutagesListed {
				fm.Outages = append(fm.Outages, fo)
			}
		}
		switch {
		case fm.Up.Count == 0 && fm.Line.Count == 0:
			fm.Cause = model.CauseNone
		case fm.Up.Count == 0:
			fm.Cause = model.CauseLine
		case fm.Line.Count == 0:
			fm.Cause = model.CauseUpstream
		default:
			fm.Cause = model.CauseBoth
		}
	}
	rep.Monitors = out
	rep.Groups = groupReports(req, np, mons, out, nwin, first, winNs)
	if slices.ContainsFunc(out, func(m model.FleetMonitor) bool {
		return slices.ContainsFunc(m.Verdicts, func(v model.FleetVerdict) bool { return v.Approx })
	}) {
		rep.Notes = append(rep.Notes, "R(L) marked approximate is a lower bound: the rollups did not count that threshold, so it is read from the histogram bins wholly below it")
	}
	rep.Notes = append(rep.Notes,
		"R(L) of a monitor pools its streams; the worst window is the worst aligned UTC "+map[bool]string{true: "hour", false: "day"}[winNs == store.HourNs]+
			" with at least "+fmt.Sprint(req.MinWindowProbes)+" probes (partial at the range's ends), not a sliding window",
		"outages are those the monitors detected and stored (link and target scope); a monitor's own stream outages are not counted")
	return rep, nil
}

// verdicts judges each profile over the whole range and over each window.
func verdicts(req Request, np int, sent uint64, ok []uint64, approx []bool, cellSent, cellOK []uint64, first, winNs int64) []model.FleetVerdict {
	out := make([]model.FleetVerdict, np)
	for p, pr := range req.Profiles {
		v := model.FleetVerdict{Profile: pr.Name}
		var okp uint64
		if ok != nil {
			okp = ok[p]
			v.Approx = approx[p]
		}
		v.Whole = reliability.Figure(pr.LatencyNs, okp, sent)
		v.Verdict = reliability.Judge(v.Whole, pr.Reliability)
		for c, n := range cellSent {
			if n < req.MinWindowProbes {
				continue
			}
			f := reliability.Figure(pr.LatencyNs, cellOK[c*np+p], n)
			v.Hours++
			if reliability.Judge(f, pr.Reliability) == model.VerdictFail {
				v.FailHours++
			}
			if v.Hours == 1 || f.R < v.WorstHour.R {
				v.WorstHour, v.WorstHourNs = f, first+int64(c)*winNs
			}
		}
		out[p] = v
	}
	return out
}

func groupReports(req Request, np int, mons []*monAcc, out []model.FleetMonitor, nwin int, first, winNs int64) []model.FleetGroup {
	members := map[groupKey][]int{}
	for i, a := range mons {
		for k, v := range a.m.Labels {
			g := groupKey{k, v}
			members[g] = append(members[g], i)
		}
	}
	keys := make([]groupKey, 0, len(members))
	for g := range members {
		keys = append(keys, g)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].label != keys[j].label {
			return keys[i].label < keys[j].label
		}
		return keys[i].value < keys[j].value
	})
	var gs []model.FleetGroup
	for _, g := range keys {
		fg := model.FleetGroup{Label: g.label, Value: g.value, Monitors: len(members[g]), Failing: make([]int, np)}
		ok, approx := make([]uint64, np), make([]bool, np)
		cellSent, cellOK := make([]uint64, nwin), make([]uint64, nwin*np)
		for _, i := range members[g] {
			a := mons[i]
			fg.Sent += a.sent
			fg.Lost += a.lost
			if a.ok == nil {
				continue
			}
			for p := range np {
				ok[p] += a.ok[p]
				approx[p] = approx[p] || a.approx[p]
			}
			for c := range cellSent {
				cellSent[c] += a.cellSent[c]
			}
			for c := range cellOK {
				cellOK[c] += a.cellOK[c]
			}
			for p, v := range out[i].Verdicts {
				if v.Verdict == model.VerdictFail {
					fg.Failing[p]++
				}
			}
		}
		fg.Verdicts = verdicts(req, np, fg.Sent, ok, approx, cellSent, cellOK, first, winNs)
		gs = append(gs, fg)
	}
	return gs
}

// delayStats summarises a monitor's RTT: exact count, mean, SD and
// extremes, percentiles from the bins' geometric middles (within 1 %).
func delayStats(a *monAcc) model.DelayStats {
	if a.answered == 0 {
		return model.DelayStats{}
	}
	st := model.DelayStats{N: a.answered, MeanNs: a.sum / float64(a.answered), MinNs: a.min, MaxNs: a.max, Approx: true}
	if a.answered > 1 {
		if v := (a.sumSq - a.sum*st.MeanNs) / float64(a.answered-1); v > 0 {
			st.SDNs = math.Sqrt(v)
		}
	}
	q := func(p float64) int64 {
		rank := max(uint64(math.Ceil(p*float64(a.answered))), 1)
		var cum uint64
		for b, n := range a.bins {
			cum += n
			if cum >= rank {
				lo := reliability.BinUpperNs(b - 1)
				if b == 0 {
					lo = 1
				}
				hi := reliability.BinUpperNs(b)
				if hi == math.MaxInt64 {
					hi = lo
				}
				return min(max(int64(math.Sqrt(float64(lo)*float64(hi))), a.min), a.max)
			}
		}
		return a.max
	}
	st.P1Ns, st.P5Ns, st.P25Ns, st.P50Ns = q(0.01), q(0.05), q(0.25), q(0.5)
	st.P75Ns, st.P95Ns, st.P99Ns, st.P999Ns = q(0.75), q(0.95), q(0.99), q(0.999)
	return st
}
