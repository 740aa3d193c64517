package reliability

import (
	"fmt"
	"slices"
	"sort"

	"github.com/sonde-project/sonde/internal/model"
)

// Analyzer is one report's streaming pass. Feed it raw samples (exact) or
// rollups (approximate where the rollups lack a figure) in send order per
// stream, then call Report once.
type Analyzer struct {
	cfg     Config
	th      []int64
	streams []model.MonitorStream
	st      []*streamAcc
	roller  *Roller
	raw     bool
	rolled  bool
	notes   map[string]bool
	err     error // the first error the roller's callback met
}

type streamAcc struct {
	sent, lost, late uint64
	rtt, fwd, rev    hist
	idle             hist
	exact            []int64
	exactFwd         []int64
	exactRev         []int64
	exactOver        bool
	within           []uint64
	load             [len(model.LoadStates)]loadTotals
	minutes          []minuteRec
	lastMinute       int64
	hasMinute        bool
	baseRef          int64 // lowest valid per-minute p5 so far (0: none)

	// raw-only detectors
	lastSent int64
	hasSent  bool
	run      lossRun
	runs     []lossRun
	ep       *episode
	episodes []*episode
	epKept   int // samples kept in episodes so far
}

type loadTotals struct {
	sent, lost uint64
	within     []uint64
}

type minuteRec struct {
	ns       int64
	sent     uint32
	lost     uint32
	answered uint32
	within   []uint32 // per threshold
	p5       int64    // -1: too few answers
}

// New returns an Analyzer for the given streams (index = sample.Stream).
func New(cfg Config, streams []model.MonitorStream) (*Analyzer, error) {
	cfg.fill()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(streams) > MaxStreams {
		return nil, fmt.Errorf("reliability: %d streams: at most %d", len(streams), MaxStreams)
	}
	a := &Analyzer{cfg: cfg, th: cfg.thresholds(), streams: streams, notes: map[string]bool{}}
	a.roller = NewRoller(a.th, func(r model.MonitorRollup) {
		if err := a.addRollup(r); err != nil && a.err == nil {
			a.err = err
		}
	})
	return a, nil
}

// ThresholdsNs returns the thresholds counted exactly (configured and the
// profiles' latencies): rollups built with these lose no R(L) accuracy.
func (a *Analyzer) ThresholdsNs() []int64 { return slices.Clone(a.th) }

func (a *Analyzer) stream(i int32) (*streamAcc, error) {
	if i < 0 || int(i) >= len(a.streams) {
		return nil, fmt.Errorf("reliability: stream index %d: the report has %d streams", i, len(a.streams))
	}
	for int(i) >= len(a.st) {
		a.st = append(a.st, nil)
	}
	if a.st[i] == nil {
		s := &streamAcc{within: make([]uint64, len(a.th))}
		for j := range s.load {
			s.load[j].within = make([]uint64, len(a.th))
		}
		a.st[i] = s
	}
	return a.st[i], nil
}

// AddSample adds one raw probe sample. Samples of a stream must come in
// send order.
func (a *Analyzer) AddSample(s model.ProbeSample) error {
	st, err := a.stream(s.Stream)
	if err != nil {
		return err
	}
	if st.hasSent && s.SentNs < st.lastSent {
		return fmt.Errorf("reliability: stream %d: sample sent at %d ns after one sent at %d ns: samples must be in send order", s.Stream, s.SentNs, st.lastSent)
	}
	if err := a.roller.Add(s); err != nil {
		return err
	}
	if a.err != nil {
		return a.err
	}
	a.raw = true
	st.lastSent, st.hasSent = s.SentNs, true
	if !failed(s) {
		if !st.exactOver {
			if len(st.exact) < a.cfg.ExactLimit {
				st.exact = append(st.exact, s.RTTNs)
				if s.FwdNs > 0 || s.RevNs > 0 {
					st.exactFwd = append(st.exactFwd, s.FwdNs)
					st.exactRev = append(st.exactRev, s.RevNs)
				}
			} else {
				st.exactOver = true
				st.exact, st.exactFwd, st.exactRev = nil, nil, nil
			}
		}
		if s.Load == model.LoadIdle {
			st.idle.add(s.RTTNs)
		}
	}
	a.outageStep(st, s)
	a.episodeStep(st, s)
	return nil
}

// AddRollup adds one stored rollup. Rollups of a stream must come in
// minute order, after any raw samples of earlier minutes.
func (a *Analyzer) AddRollup(r model.MonitorRollup) error {
	a.rolled = true
	return a.addRollup(r)
}

func (a *Analyzer) addRollup(r model.MonitorRollup) error {
	st, err := a.stream(r.Stream)
	if err != nil {
		return err
	}
	if err := checkRollup(r); err != nil {
		return err
	}
	if st.hasMinute && r.MinuteNs <= st.lastMinute {
		return fmt.Errorf("reliability: stream %d: rollup of minute %d after minute %d: rollups must be in minute order, one per minute", r.Stream, r.MinuteNs, st.lastMinute)
	}
	st.lastMinute, st.hasMinute = r.MinuteNs, true
	answered := r.Sent - r.Lost
	st.sent += uint64(r.Sent)
	st.lost += uint64(r.Lost)
	st.late += uint64(r.Late)
	st.rtt.addBins(r.Bins)
	st.rtt.addMoments(uint64(answered), r.SumNs, r.SumSqNs, r.MinNs, r.MaxNs)
	if len(r.FwdBins) > 0 {
		st.fwd.addBins(r.FwdBins)
		st.rev.addBins(r.RevBins)
	}
	var mh hist
	mh.addBins(r.Bins)
	mh.addMoments(uint64(answered), 0, 0, r.MinNs, r.MaxNs)
	rec := minuteRec{ns: r.MinuteNs, sent: r.Sent, lost: r.Lost, answered: answered, within: make([]uint32, len(a.th)), p5: -1}
	for i, l := range a.th {
		var w uint32
		if j := slices.Index(r.ThresholdsNs, l); j >= 0 {
			w = r.Within[j]
		} else if answered == 0 || l >= r.MaxNs {
			w = answered
		} else {
			w = uint32(min(mh.countLE(l), uint64(answered)))
			a.notes["R(L) for a threshold the rollups did not count exactly is read from their histogram (off by at most one 2 % bin)"] = true
		}
		rec.within[i] = w
		st.within[i] += uint64(w)
	}
	for _, bl := range r.ByLoad {
		lt := &st.load[loadIndex(bl.Load)]
		lt.sent += uint64(bl.Sent)
		lt.lost += uint64(bl.Lost)
		for i, l := range a.th {
			if j := slices.Index(r.ThresholdsNs, l); j >= 0 {
				lt.within[i] += uint64(bl.Within[j])
			} else if l >= r.MaxNs {
				lt.within[i] += uint64(bl.Sent - bl.Lost)
			} else {
				// The largest counted threshold below l: a lower bound.
				var w uint32
				for j, rl := range r.ThresholdsNs {
					if rl < l {
						w = max(w, bl.Within[j])
					}
				}
				lt.within[i] += uint64(w)
				a.notes["R(L) per load state for a threshold the rollups did not count is a lower bound (the next lower counted threshold)"] = true
			}
		}
	}
	if answered >= a.cfg.Step.MinAnswered {
		rec.p5 = mh.quantile(0.05)
		if st.baseRef == 0 || rec.p5 < st.baseRef {
			st.baseRef = rec.p5
		}
	}
	st.minutes = append(st.minutes, rec)
	return nil
}

// checkRollup rejects a rollup whose counts contradict each other.
func checkRollup(r model.MonitorRollup) error {
	bad := func(what string) error {
		return fmt.Errorf("reliability: rollup of stream %d, minute %d: %s", r.Stream, r.MinuteNs, what)
	}
	if r.MinuteNs%MinuteNs != 0 {
		return bad("minute not on a minute boundary")
	}
	if r.Lost > r.Sent || r.Late > r.Lost {
		return bad(fmt.Sprintf("sent %d, lost %d, late %d are inconsistent", r.Sent, r.Lost, r.Late))
	}
	if len(r.Within) != len(r.ThresholdsNs) || len(r.ThresholdsNs) > 64 {
		return bad("thresholds and within counts differ in number")
	}
	answered := r.Sent - r.Lost
	for _, w := range r.Within {
		if w > answered {
			return bad("more probes within a threshold than answered")
		}
	}
	var n uint64
	for _, b := range r.Bins {
		if int(b.Bin) >= NumBins {
			return bad(fmt.Sprintf("histogram bin %d out of range", b.Bin))
		}
		n += uint64(b.N)
	}
	if n != uint64(answered) {
		return bad(fmt.Sprintf("histogram holds %d values for %d answered probes", n, answered))
	}
	if answered > 0 && r.MinNs > r.MaxNs {
		return bad("min above max")
	}
	var ls uint64
	for _, bl := range r.ByLoad {
		if len(bl.Within) != len(r.ThresholdsNs) || bl.Lost > bl.Sent {
			return bad("inconsistent load-state counts")
		}
		for _, w := range bl.Within {
			if w > bl.Sent-bl.Lost {
				return bad("more load-state probes within a threshold than answered")
			}
		}
		ls += uint64(bl.Sent)
	}
	if ls > uint64(r.Sent) {
		return bad("load states count more probes than sent")
	}
	for _, b := range r.FwdBins {
		if int(b.Bin) >= NumBins {
			return bad("one-way histogram bin out of range")
		}
	}
	for _, b := range r.RevBins {
		if int(b.Bin) >= NumBins {
			return bad("one-way histogram bin out of range")
		}
	}
	return nil
}

// Figure is R(L), ok of n probes within l, with its bounds (Bounds).
func Figure(l int64, ok, n uint64) model.Reliability {
	f := model.Reliability{LNs: l, Sent: n, OK: ok}
	if n > 0 {
		f.R = float64(ok) / float64(n)
	}
	f.Lower, f.Upper = Bounds(ok, n)
	return f
}

// Report finishes the pass and assembles the report over [fromNs, toNs)
// (the caller's range, for labelling and for closing an outage still open
// at its end). It ends the analysis: add nothing after it.
func (a *Analyzer) Report(fromNs, toNs int64) (*model.MonitorReport, error) {
	a.roller.Flush()
	if a.err != nil {
		return nil, a.err
	}
	rep := &model.MonitorReport{Schema: model.MonitorSchema, FromNs: fromNs, ToNs: toNs, Streams: a.streams, Profiles: a.cfg.Profiles}
	switch {
	case a.raw && a.rolled:
		rep.Source = "raw+rollups"
	case a.rolled:
		rep.Source = "rollups"
	default:
		rep.Source = "raw"
	}
	for i, st := range a.st {
		if st == nil || st.sent == 0 {
			continue
		}
		rep.Stats = append(rep.Stats, a.streamReport(int32(i), st))
	}
	rep.Events = append(rep.Events, a.outages(toNs)...)
	for i, st := range a.st {
		if st == nil {
			continue
		}
		rep.Events = append(rep.Events, a.steps(int32(i), st)...)
		rep.Events = append(rep.Events, a.episodeEvents(int32(i), st)...)
	}
	sort.SliceStable(rep.Events, func(i, j int) bool { return rep.Events[i].StartNs < rep.Events[j].StartNs })
	for _, st := range a.st {
		if st != nil && st.exactOver {
			a.notes["percentiles of a stream with more raw samples than the exact limit come from the histogram (within 1 %)"] = true
		}
	}
	if a.rolled {
		a.notes["percentiles from rollups are read from 2 %-wide histogram bins (within 1 %); mean, SD, min, max and R(L) at counted thresholds are exact"] = true
		a.notes["outages and loaded episodes need raw samples: over rollups the stored events stand for them"] = true
	}
	for n := range a.notes {
		rep.Notes = append(rep.Notes, n)
	}
	slices.Sort(rep.Notes)
	return rep, nil
}

func (a *Analyzer) streamReport(i int32, st *streamAcc) model.StreamReport {
	sr := model.StreamReport{Stream: i, Sent: st.sent, Lost: st.lost, Late: st.late}
	if !st.exactOver && !a.rolled {
		orderForQuantiles(st.exact)
		sr.RTT = exactStats(&st.rtt, st.exact)
	} else {
		sr.RTT = st.rtt.stats()
	}
	if st.fwd.bins != nil {
		f, r := st.fwd.binStats(), st.rev.binStats()
		if !st.exactOver && !a.rolled && len(st.exactFwd) > 0 {
			orderForQuantiles(st.exactFwd)
			orderForQuantiles(st.exactRev)
			f, r = oneWayStats(st.exactFwd), oneWayStats(st.exactRev)
		}
		sr.Fwd, sr.Rev = &f, &r
	}
	sr.IdleBaselineNs = a.baseline(st)
	for k, l := range a.th {
		sr.Reliability = append(sr.Reliability, Figure(l, st.within[k], st.sent))
	}
	for _, ls := range model.LoadStates {
		lt := st.load[ls]
		if lt.sent == 0 {
			continue
		}
		lr := model.LoadReliability{Load: ls.String(), Sent: lt.sent}
		for k, l := range a.th {
			lr.Reliability = append(lr.Reliability, Figure(l, lt.within[k], lt.sent))
		}
		sr.ByLoad = append(sr.ByLoad, lr)
	}
	sr.Windows, sr.Verdicts = a.windows(st, sr.Reliability)
	return sr
}

// oneWayStats summarises sorted one-way delays exactly.
func oneWayStats(vs []int64) model.DelayStats {
	var h hist
	for _, v := range vs {
		h.add(v)
	}
	return exactStats(&h, vs)
}

// baseline is the idle reference of loaded episodes: the median RTT of
// idle-labelled probes (seed 001's "idle median 19 ms"), else the p5 of all
// answered probes (a stream without load labels).
func (a *Analyzer) baseline(st *streamAcc) int64 {
	if st.idle.n > 0 {
		return st.idle.quantile(0.5)
	}
	if st.rtt.n > 0 {
		return st.rtt.quantile(0.05)
	}
	return 0
}
