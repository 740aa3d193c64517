// Package query assembles a monitor report (`sonde monitor report`): it
// reads one monitor's rows from a store for a time range (rollups where
// retention has removed the raw samples, raw samples where they remain),
// streams them through the reliability analysis, adds the stored events
// the analysis cannot find again, and the per-day table, time series and
// distributions the renderers draw. It reads only: a report never writes
// to the store.
package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Bounds on a request: a flag or a config supplies them.
const (
	// MaxRangeNs is the longest range a report covers (10 years).
	MaxRangeNs = int64(10 * 366 * 24 * 3600 * 1e9)
	// MaxEvents bounds the stored events a report lists.
	MaxEvents = 10_000
	// MaxSeriesPoints bounds a stream's time series.
	MaxSeriesPoints = 1500
	minuteNs        = reliability.MinuteNs
	dayNs           = 24 * 60 * minuteNs
)

// ErrNoData is returned (wrapped) when the monitor has no probe in range,
// or the store has no such monitor.
var ErrNoData = errors.New("no data")

// Request is one report's question.
type Request struct {
	// Name is the monitor; "" picks the store's only monitor.
	Name string
	// FromNs, ToNs: the range [from, to), Unix ns.
	FromNs, ToNs int64
	// Config is the analysis' configuration (thresholds, profiles …).
	// Its capacities are replaced by the monitor's recorded history
	// (store.Capacities) and the overrides below.
	Config reliability.Config
	// UpBps, DownBps override the recorded capacities (bit/s) over the
	// whole range, per direction; 0 keeps the recorded ones.
	UpBps, DownBps float64
	// Points bounds each stream's time series (1 to MaxSeriesPoints; 0:
	// MaxSeriesPoints): the buckets are as many whole minutes as keep it
	// within.
	Points int
	// RawFromNs, when set, reads rollups, not raw samples, for the minutes
	// before it even where retention kept the raw ones (the dashboard's
	// long ranges: a month of raw probes takes a minute to read, its
	// rollups a second). Rounded down to a minute.
	RawFromNs int64
	// Detail adds the dashboard's figures to each series point (the smoke
	// quantiles, counts within each threshold and per load state) and the
	// report's thresholds.
	Detail bool
}

// Check bounds the range.
func (r Request) Check() error {
	if r.ToNs <= r.FromNs {
		return fmt.Errorf("query: the range ends (%d ns) before it starts (%d ns)", r.ToNs, r.FromNs)
	}
	if r.ToNs-r.FromNs > MaxRangeNs {
		return fmt.Errorf("query: a range of %.0f days: at most 10 years", float64(r.ToNs-r.FromNs)/float64(dayNs))
	}
	if r.Points < 0 || r.Points > MaxSeriesPoints {
		return fmt.Errorf("query: %d series points: want 1 to %d", r.Points, MaxSeriesPoints)
	}
	return nil
}

// Run reads the monitor's rows in the request's range from st and returns
// its report. A store without the monitor, or without a probe of it in
// range, gives an error wrapping ErrNoData.
func Run(ctx context.Context, st store.Monitors, req Request) (*model.MonitorReport, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	name, mid, err := FindMonitor(ctx, st, req.Name)
	if err != nil {
		return nil, err
	}
	streams, index, err := Streams(ctx, st, name, mid)
	if err != nil {
		return nil, err
	}
	remap := func(id int32) (int32, error) {
		i, ok := index[id]
		if !ok {
			return 0, fmt.Errorf("query: a row of stream %d, which monitor %q does not list", id, name)
		}
		return i, nil
	}

	cfg := req.Config
	capNote, err := capacities(ctx, st, mid, req, &cfg.Loaded)
	if err != nil {
		return nil, fmt.Errorf("monitor %q: %w", name, err)
	}
	an, err := reliability.New(cfg, streams)
	if err != nil {
		return nil, err
	}
	th := an.ThresholdsNs()
	points := int64(req.Points)
	if points == 0 {
		points = MaxSeriesPoints
	}
	side := newSide(len(streams), th, req.FromNs, req.ToNs, points, req.Detail)

	// Retention removes raw samples by age, for every stream alike: before
	// the oldest one still stored, rollups stand for them. The cut is a
	// minute boundary, so no minute is counted twice.
	cut := req.ToNs
	if first, ok, err := st.FirstSample(ctx, mid); err != nil {
		return nil, err
	} else if ok {
		b, err := rawFrom(ctx, st, mid, first)
		if err != nil {
			return nil, fmt.Errorf("monitor %q: %w", name, err)
		}
		cut = min(max(b, req.FromNs), req.ToNs)
	}
	if f := floorMinute(req.RawFromNs); f > cut {
		cut = min(f, req.ToNs)
	}
	rolled := 0
	if cut > req.FromNs {
		err := st.Rollups(ctx, mid, floorMinute(req.FromNs), cut, func(r store.Rollup) error {
			rolled++
			m, err := r.Model()
			if err != nil {
				return err
			}
			if m.Stream, err = remap(m.Stream); err != nil {
				return err
			}
			if err := an.AddRollup(m); err != nil {
				return err
			}
			side.addMinute(m)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("monitor %q: %w", name, err)
		}
	}
	if cut < req.ToNs {
		err := st.Probes(ctx, mid, cut, req.ToNs, func(p model.ProbeSample) error {
			var err error
			if p.Stream, err = remap(p.Stream); err != nil {
				return err
			}
			if err := an.AddSample(p); err != nil {
				return err
			}
			return side.addSample(p)
		})
		if err != nil {
			return nil, fmt.Errorf("monitor %q: %w", name, err)
		}
	}
	side.flush()
	if side.sent == 0 {
		return nil, fmt.Errorf("monitor %q has no probe between %s and %s: %w", name, isoNs(req.FromNs), isoNs(req.ToNs), ErrNoData)
	}
	rep, err := an.Report(req.FromNs, req.ToNs)
	if err != nil {
		return nil, fmt.Errorf("monitor %q: %w", name, err)
	}
	rep.Monitor = name
	rep.RawFromNs = cut
	stored, err := storedEvents(ctx, st, mid, req, cut, remap)
	if err != nil {
		return nil, err
	}
	rep.Events = append(rep.Events, stored...)
	sort.SliceStable(rep.Events, func(i, j int) bool { return rep.Events[i].StartNs < rep.Events[j].StartNs })
	rep.Daily, rep.Series, rep.CDFs = side.daily, side.series, side.cdfs()
	if req.Detail {
		rep.ThresholdsNs = th
	}
	if capNote != "" {
		rep.Notes = append(rep.Notes, capNote)
	}
	if rolled > 0 && cut < req.ToNs {
		rep.Notes = append(rep.Notes, fmt.Sprintf("raw samples begin at %s (retention): before it the report reads per-minute rollups, whole minutes from %s", isoNs(cut), isoNs(floorMinute(req.FromNs))))
	}
	if side.dailyApprox {
		rep.Notes = append(rep.Notes, "a day's R(L) at a threshold its rollups did not count is a lower bound (histogram bins wholly below it)")
	}
	if rolled > 0 {
		rep.Notes = append(rep.Notes, "distributions per load state cover raw samples only: rollups keep one histogram per minute, not one per load state")
	}
	return rep, nil
}

// rawFrom is where a report starts reading raw samples, given the oldest
// one stored (first): the start of its minute when the raw samples of
// that minute are all there (a monitor's first minute, which began in
// it: its rollup would blur a phase of a few seconds into the whole
// minute), else the next minute (retention removed the minute's start,
// its rollup has it all). Rollups stand only for minutes whose raw
// samples retention removed.
func rawFrom(ctx context.Context, st store.Monitors, mid int64, first int64) (int64, error) {
	m := floorMinute(first)
	rolled := map[int32]uint64{}
	if err := st.Rollups(ctx, mid, m, m+minuteNs, func(r store.Rollup) error {
		rolled[r.Stream] += uint64(r.Sent)
		return nil
	}); err != nil {
		return 0, err
	}
	if len(rolled) == 0 {
		return m, nil
	}
	raw := map[int32]uint64{}
	if err := st.Probes(ctx, mid, m, m+minuteNs, func(p model.ProbeSample) error {
		raw[p.Stream]++
		return nil
	}); err != nil {
		return 0, err
	}
	for s, n := range rolled {
		if raw[s] < n {
			return ceilMinute(first), nil
		}
	}
	return m, nil
}

// capacities fills l with the link capacities for the analysis' inferred
// buffers: the monitor's recorded history over the range, each direction
// replaced by the request's override when given. It returns a note
// saying which were used (or that none was known).
func capacities(ctx context.Context, st store.Monitors, mid int64, req Request, l *reliability.LoadedConfig) (string, error) {
	rows, err := st.Capacities(ctx, mid, req.FromNs, req.ToNs)
	if err != nil {
		return "", err
	}
	l.Capacities = l.Capacities[:0:0]
	if req.UpBps > 0 {
		l.UpBps = req.UpBps
	}
	if req.DownBps > 0 {
		l.DownBps = req.DownBps
	}
	var up, down []string
	seen := func(list []string, bps float64, src string) []string {
		if bps <= 0 {
			return list
		}
		v := units.FormatRate(bps)
		if src != "" {
			v += " " + src
		}
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
		return list
	}
	for _, r := range rows {
		if req.UpBps > 0 {
			r.UpBps, r.UpSource = req.UpBps, "given"
		}
		if req.DownBps > 0 {
			r.DownBps, r.DownSource = req.DownBps, "given"
		}
		l.Capacities = append(l.Capacities, reliability.CapacitySpan{FromNs: r.FromNs, UpBps: r.UpBps, DownBps: r.DownBps})
		up, down = seen(up, r.UpBps, r.UpSource), seen(down, r.DownBps, r.DownSource)
	}
	if len(rows) == 0 {
		up, down = seen(up, l.UpBps, "given"), seen(down, l.DownBps, "given")
	}
	if len(up)+len(down) == 0 {
		return "no link capacity recorded by the monitor (it learns or takes one with --interface) nor given (--up/--down): loaded episodes have no inferred buffer", nil
	}
	list := func(l []string) string {
		if len(l) == 0 {
			return "unknown"
		}
		if len(l) > 4 {
			l = append(l[:4:4], fmt.Sprintf("%d more", len(l)-4))
		}
		return strings.Join(l, ", ")
	}
	return fmt.Sprintf("inferred buffers use the link capacity in effect at each episode: up %s; down %s", list(up), list(down)), nil
}

// Streams returns a monitor's streams in store order (the analysis'
// indexes) and the index of each store stream ID (what rows carry).
func Streams(ctx context.Context, st store.Monitors, name string, mid int64) ([]model.MonitorStream, map[int32]int32, error) {
	byID, err := st.ListStreams(ctx, mid)
	if err != nil {
		return nil, nil, err
	}
	if len(byID) > reliability.MaxStreams {
		return nil, nil, fmt.Errorf("query: monitor %q has %d streams, more than the %d a report covers", name, len(byID), reliability.MaxStreams)
	}
	streams, index := store.OrderStreams(byID)
	return streams, index, nil
}

// FindMonitor resolves a monitor's name without registering it: "" is
// the store's only monitor.
func FindMonitor(ctx context.Context, st store.Monitors, name string) (string, int64, error) {
	ms, err := st.ListMonitors(ctx)
	if err != nil {
		return "", 0, err
	}
	names := make([]string, 0, len(ms))
	for n := range ms {
		names = append(names, n)
	}
	slices.Sort(names)
	const show = 10
	list := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		list += fmt.Sprintf(" and %d more", len(names)-show)
	}
	switch {
	case len(ms) == 0:
		return "", 0, fmt.Errorf("the store holds no monitor: %w", ErrNoData)
	case name == "" && len(ms) == 1:
		return names[0], ms[names[0]], nil
	case name == "":
		return "", 0, fmt.Errorf("the store holds %d monitors (%s): name one with --name: %w", len(ms), list, ErrNoData)
	}
	id, ok := ms[name]
	if !ok {
		return "", 0, fmt.Errorf("the store has no monitor named %q (it has %s): %w", name, list, ErrNoData)
	}
	return name, id, nil
}

// storedEvents are the stored events the analysis does not find again:
// every kind it never finds (restarts, storage, counters, clock), and
// outages and loaded episodes where it read rollups (before cut). Baseline
// steps it finds over rollups and raw samples alike. Restarts recorded
// only in the restarts table become restart events. The daemon's own
// restart event spans the gap (from the newest stored sample to the
// start), so it is matched with its restart row by its end: one restart,
// one event.
func storedEvents(ctx context.Context, st store.Monitors, mid int64, req Request, cut int64, remap func(int32) (int32, error)) ([]model.MonitorEvent, error) {
	evs, err := st.Events(ctx, mid, req.FromNs, req.ToNs, MaxEvents)
	if err != nil {
		return nil, err
	}
	var out []model.MonitorEvent
	restartAt := map[int64]bool{}
	for _, e := range evs {
		switch e.Kind {
		case model.EventBaselineStep:
			continue
		case model.EventOutage, model.EventLoaded:
			if e.StartNs >= cut {
				continue
			}
		case model.EventRestart:
			restartAt[e.EndNs] = true
		}
		if e.Stream >= 0 {
			i, err := remap(e.Stream)
			if err != nil {
				return nil, err
			}
			e.Stream = i
		}
		e.Flags = append(e.Flags, "stored")
		out = append(out, e)
	}
	rs, err := st.Restarts(ctx, mid, req.FromNs, req.ToNs)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if restartAt[r.TimeNs] {
			continue
		}
		e := model.MonitorEvent{Kind: model.EventRestart, StartNs: r.TimeNs, EndNs: r.TimeNs, Stream: -1,
			Text: "monitor started (sonde " + r.Version + ")", Flags: []string{"stored"}}
		if r.LastNs > 0 && r.LastNs < r.TimeNs {
			e.StartNs = r.LastNs
			e.Text = fmt.Sprintf("monitor restarted (sonde %s) after a gap of %.1f s", r.Version, float64(r.TimeNs-r.LastNs)/1e9)
			e.Detail = map[string]float64{"gap_s": float64(r.TimeNs-r.LastNs) / 1e9}
		}
		out = append(out, e)
	}
	if len(out) > MaxEvents {
		out = out[:MaxEvents]
	}
	return out, nil
}

func floorMinute(t int64) int64 { return units.FloorTo(t, minuteNs) }

func ceilMinute(t int64) int64 { return units.CeilTo(t, minuteNs) }
