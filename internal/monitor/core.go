package monitor

import (
	"context"
	"fmt"
	"log"
	"slices"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/ifstat"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/monitor/ship"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// core is the daemon's loop state: everything but sockets, so a test can
// drive it with its own clock and samples. Only step (one goroutine)
// touches the loop fields; mu guards what /status and /metrics read.
type core struct {
	plan     *Plan
	st       store.Store
	mid      int64
	ring     *probe.Ring
	log      *log.Logger
	tracker  *ifstat.Tracker
	ifEvents *eventQueue
	stats    func() []probe.StreamStats
	version  string
	metrics  *metrics
	capRec   capRecorder // capacity.go
	// shipStatus is the shipper's state for /status (nil: no --ship).
	shipStatus func() ship.Status

	timeoutNs  int64
	horizonNs  int64 // a minute is rolled up this long after its end
	eventEvery int64
	settleNs   int64
	th         []int64 // thresholds counted exactly (rollups, R(L) gauges)
	// backlogLimit: rows held while the store fails, backlogSpan of the
	// expected rows with room for counters and events.
	backlogLimit int

	// loop fields
	buf        []model.ProbeSample
	pending    []model.ProbeSample // probes of minutes not rolled up yet
	recent     *window             // the detectors' window, drain order (window.go)
	order      []int32             // detect's order of recent (indexes), reused
	lastCount  int64               // newest counter sample written
	nextEvents int64
	nextRetain int64
	written    map[eventKey]int64       // events written (by kind, stream, start) → start
	long       map[outageKey]longOutage // outages seen open and whole (longoutage.go)
	events     []model.MonitorEvent
	backlog    []*store.Batch
	backRows   int
	failSince  int64
	failErr    string
	nextRetry  int64
	dropped    uint64
	held       uint64

	mu     sync.Mutex
	status Status
}

type eventKey struct {
	kind   model.EventKind
	stream int32
	start  int64
}

func newCore(plan *Plan, st store.Store, mid int64, ring *probe.Ring, lg *log.Logger) *core {
	timeout := int64(time.Duration(plan.Timeout))
	c := &core{plan: plan, st: st, mid: mid, ring: ring, log: lg,
		timeoutNs: timeout, horizonNs: 4*timeout + int64(2*tick),
		eventEvery: int64(eventEvery), settleNs: int64(settle),
		written: map[eventKey]int64{}, long: map[outageKey]longOutage{},
		recent: newWindow(windowCap(len(plan.Streams), plan.Rate, time.Duration(timeout)))}
	perSec := float64(len(plan.Streams))*plan.Rate*1.5 + 50
	c.backlogLimit = min(maxBacklogRows, int(perSec*backlogSpan.Seconds()))
	c.th = c.thresholds()
	c.metrics = newMetrics(c)
	c.status.Name = plan.Name
	c.status.Store.Location = st.Location().String()
	c.status.Store.Healthy = true
	for _, s := range plan.Streams {
		c.status.Streams = append(c.status.Streams, StreamStatus{Name: s.Name, Target: s.Target, Kind: s.Kind, DSCP: s.DSCP, LastRTTMs: -1})
	}
	return c
}

// restart records this start and the gap since the newest stored sample
// (after a kill -9, the last second at most is missing before it).
func (c *core) restart(ctx context.Context, now int64) error {
	last, ok, err := c.st.LastSample(ctx, c.mid)
	if err != nil {
		return err
	}
	if err := c.st.Restart(ctx, c.mid, store.RestartRow{TimeNs: now, LastNs: last, Version: c.version}); err != nil {
		return err
	}
	if err := c.recordCapacity(ctx, now, true); err != nil {
		return err
	}
	ev := model.MonitorEvent{Kind: model.EventRestart, StartNs: now, EndNs: now, Stream: -1, Text: "monitor started (no earlier sample stored)"}
	if ok && last < now {
		gap := time.Duration(now - last)
		ev.StartNs = last
		ev.Text = fmt.Sprintf("monitor started again after a gap of %v (newest stored probe sent at %s)", gap.Round(time.Millisecond), time.Unix(0, last).UTC().Format(time.RFC3339Nano))
		ev.Detail = map[string]float64{"gap_s": gap.Seconds()}
		c.log.Print(ev.Text)
	}
	c.events = append(c.events, ev)
	c.mu.Lock()
	c.status.StartedNs = now
	c.mu.Unlock()
	c.nextEvents = now + c.eventEvery
	c.nextRetain = now + int64(time.Minute) // not in the way of the start
	return nil
}

// step is one pass of the loop at time now (Unix ns, the probers' clock);
// final: the probers are stopped, roll up every minute.
func (c *core) step(ctx context.Context, now int64, final bool) {
	c.buf = c.ring.Drain(c.buf[:0])
	b := &store.Batch{Probes: make([]model.ProbeSample, 0, len(c.buf))}
	for _, s := range c.buf {
		if c.tracker != nil {
			s.Load = c.tracker.Classify(s.SentNs)
		}
		c.metrics.observe(s)
		b.Probes = append(b.Probes, s)
		if s.Late {
			replaceLost(c.pending, s)
			replaceLostRecent(c.recent, s)
		} else {
			c.pending = append(c.pending, s)
			c.recent.Push(winOf(s))
		}
	}
	if c.tracker != nil {
		n := len(b.Counters)
		b.Counters = c.tracker.Samples(c.lastCount, b.Counters)
		if len(b.Counters) > n {
			c.lastCount = b.Counters[len(b.Counters)-1].TimeNs
		}
	}
	b.Events = append(b.Events, c.ifEvents.take()...)
	b.Events = append(b.Events, c.events...)
	c.events = c.events[:0]
	cut := minuteStart(now - c.horizonNs)
	if final {
		cut = now + int64(time.Minute)
	}
	b.Rollups = c.rollUp(cut)
	c.trimRecent(now)
	if now >= c.nextEvents || final {
		c.nextEvents = now + c.eventEvery
		b.Events = append(b.Events, c.detect(now)...)
	}
	c.write(ctx, now, b)
	_ = c.recordCapacity(ctx, now, false) // logged; retried
	if now >= c.nextRetain && !final {
		c.nextRetain = now + int64(retainEvery)
		c.retain(ctx, now)
	}
	c.updateStatus(now, b.Events)
}

// replaceLost puts a late sample in place of its probe's lost one (the
// newest samples are at the end, so the search is short).
func replaceLost(ss []model.ProbeSample, late model.ProbeSample) {
	for i := len(ss) - 1; i >= 0; i-- {
		s := &ss[i]
		if s.Stream == late.Stream && s.SentNs == late.SentNs {
			if s.Lost && !s.Late {
				late.Load = s.Load
				*s = late
			}
			return
		}
		if s.SentNs < late.SentNs-8*int64(probe.MaxTimeout) {
			return
		}
	}
}

// replaceLostRecent is replaceLost for the detectors' window.
func replaceLostRecent(ws *window, late model.ProbeSample) {
	for i := ws.Len() - 1; i >= 0; i-- {
		w := ws.At(i)
		if w.Stream == late.Stream && w.SentNs == late.SentNs {
			if w.Lost && !w.Late {
				late.Load = w.Load
				ws.Set(i, winOf(late))
			}
			return
		}
		if w.SentNs < late.SentNs-8*int64(probe.MaxTimeout) {
			return
		}
	}
}

func minuteStart(ns int64) int64 { return units.FloorTo(ns, reliability.MinuteNs) }

// rollUp rolls up the pending probes sent before cut (a minute start) and
// keeps the rest pending.
func (c *core) rollUp(cut int64) []store.Rollup {
	// Most seconds no minute closes: return before copying anything.
	if !slices.ContainsFunc(c.pending, func(s model.ProbeSample) bool { return s.SentNs < cut }) {
		return nil
	}
	var done, keep []model.ProbeSample
	for _, s := range c.pending {
		if s.SentNs < cut {
			done = append(done, s)
		} else {
			keep = append(keep, s)
		}
	}
	if len(done) == 0 {
		return nil
	}
	c.pending = keep
	slices.SortStableFunc(done, byStreamSent)
	var out []store.Rollup
	r := reliability.NewRoller(c.th, func(m model.MonitorRollup) {
		ro, err := store.RollupFrom(m)
		if err != nil {
			c.log.Printf("rollup of stream %d minute %d: %v", m.Stream, m.MinuteNs, err)
			return
		}
		out = append(out, ro)
	})
	for _, s := range done {
		if err := r.Add(s); err != nil {
			c.log.Printf("rollup: %v", err)
		}
	}
	r.Flush()
	return out
}

// thresholds are the L of R(L) the rollups count exactly: the analysis
// defaults and the profiles' latencies.
func (c *core) thresholds() []int64 {
	a, err := reliability.New(reliabilityConfig(c.plan, 0, 0), c.plan.Streams)
	if err != nil {
		return reliability.Defaults().ThresholdsNs
	}
	return a.ThresholdsNs()
}

// winSample is one probe as the detectors' window keeps it: what the
// detectors, the alerts, the dashboard and /status read (no sequence
// number, lateness or one-way delays), 24 bytes where a model.ProbeSample
// takes 56, and packed in 14 by the window's ring (window.go). The window
// is the daemon's largest structure (15 minutes: 90,000 samples at
// 100/s), so its size is most of the daemon's heap (docs/monitor.md,
// "Memory").
type winSample struct {
	SentNs int64
	RTTNs  int64 // -1: lost; a late sample's RTT when Late
	Stream int32
	Lost   bool
	Late   bool
	Load   model.LoadState
}

func winOf(s model.ProbeSample) winSample {
	return winSample{SentNs: s.SentNs, RTTNs: s.RTTNs, Stream: s.Stream, Lost: s.Lost, Late: s.Late, Load: s.Load}
}

// sample is w as a model.ProbeSample (sequence, lateness and one-way
// delays zero).
func (w winSample) sample() model.ProbeSample {
	return model.ProbeSample{SentNs: w.SentNs, RTTNs: w.RTTNs, Stream: w.Stream, Lost: w.Lost, Late: w.Late, Load: w.Load}
}

// trimRecent keeps the detectors' window bounded in time and count: it
// drops the samples at its front sent before the window's span (in drain
// order: it stops at the first younger one), and beyond maxRecent.
func (c *core) trimRecent(now int64) {
	from := now - int64(recentSpan)
	i := 0
	for i < c.recent.Len() && c.recent.SentNs(i) < from {
		i++
	}
	c.recent.Drop(max(i, c.recent.Len()-maxRecent))
}

// byStreamSent orders samples by stream, then send time.
func byStreamSent(a, b model.ProbeSample) int {
	if a.Stream != b.Stream {
		return int(a.Stream - b.Stream)
	}
	return int(min(max(a.SentNs-b.SentNs, -1), 1))
}

// finalOrder appends to dst the indexes in recent of the samples sent
// before to, ordered by stream, then send time (stable), as a stable sort
// by byStreamSent would, in linear time: a counting pass distributes them
// by stream keeping drain order, which is already send order but for the
// lost samples (emitted a timeout late), so each stream's run is sorted
// only when it is not in order already. The stable sort of the whole
// window every 10 s was the loop's largest cost; indexes (4 bytes a
// sample) instead of a sorted copy of the window (5 MB at 100/s, kept
// between passes) were its largest memory saving.
func finalOrder(dst []int32, recent *window, to int64, streams int) []int32 {
	bySent := func(a, b int32) int {
		return int(min(max(recent.SentNs(int(a))-recent.SentNs(int(b)), -1), 1))
	}
	starts := make([]int, streams+1)
	n := 0
	for i := range recent.Len() {
		if recent.SentNs(i) >= to {
			continue
		}
		st := recent.Stream(i)
		if int(st) >= streams {
			// Not a configured stream (never from the probers): the
			// general sort.
			for i := range recent.Len() {
				if recent.SentNs(i) < to {
					dst = append(dst, int32(i))
				}
			}
			slices.SortStableFunc(dst, func(a, b int32) int {
				if sa, sb := recent.Stream(int(a)), recent.Stream(int(b)); sa != sb {
					return int(sa - sb)
				}
				return bySent(a, b)
			})
			return dst
		}
		starts[st+1]++
		n++
	}
	for i := 1; i <= streams; i++ {
		starts[i] += starts[i-1]
	}
	dst = slices.Grow(dst, n)[:n]
	next := slices.Clone(starts[:streams])
	for i := range recent.Len() {
		if recent.SentNs(i) < to {
			st := recent.Stream(i)
			dst[next[st]] = int32(i)
			next[st]++
		}
	}
	for k := range streams {
		if run := dst[starts[k]:starts[k+1]]; !slices.IsSortedFunc(run, bySent) {
			slices.SortStableFunc(run, bySent)
		}
	}
	return dst
}

// detect runs the event detectors over the recent window's final probes
// (sent at least a timeout ago) and returns the events not written yet
// that have ended: an outage or episode still going is written once it
// ends, a step once it has held.
func (c *core) detect(now int64) []model.MonitorEvent {
	to := now - c.timeoutNs
	c.order = finalOrder(c.order[:0], c.recent, to, len(c.plan.Streams))
	if len(c.order) == 0 {
		return nil
	}
	var up, down float64
	if c.tracker != nil {
		st := c.tracker.Status()
		up, down = st.UpBps, st.DownBps
	}
	a, err := reliability.New(reliabilityConfig(c.plan, up, down), c.plan.Streams)
	if err != nil {
		c.log.Printf("detectors: %v", err)
		return nil
	}
	from := c.recent.SentNs(int(c.order[0]))
	for _, i := range c.order {
		s := c.recent.At(int(i)).sample()
		from = min(from, s.SentNs)
		if err := a.AddSample(s); err != nil {
			c.log.Printf("detectors: %v", err)
			return nil
		}
	}
	rep, err := a.Report(from, to)
	if err != nil {
		c.log.Printf("detectors: %v", err)
		return nil
	}
	c.metrics.setReliability(c.recent, c.th, to)
	var out []model.MonitorEvent
	full := now-from >= int64(recentSpan)-int64(time.Minute)
	for _, e := range rep.Events {
		cut := e.StartNs <= from && full
		if e.Kind == model.EventOutage {
			var ok bool
			settled := e.EndNs <= to-c.settleNs
			if e, ok = c.trackOutage(e, cut, settled, now); !ok {
				continue
			}
			cut = false // whole again: its start is the remembered one
		}
		if slices.Contains(e.Flags, "open") || e.EndNs > to-c.settleNs {
			continue // may still grow
		}
		if cut {
			continue // cut by the window's start: written when it was whole
		}
		k := eventKey{e.Kind, e.Stream, e.StartNs}
		if _, ok := c.written[k]; ok {
			continue
		}
		c.written[k] = e.StartNs
		out = append(out, e)
		c.log.Print(e.Text)
	}
	for k, start := range c.written {
		if start < now-2*int64(recentSpan) {
			delete(c.written, k)
		}
	}
	c.pruneLong(now)
	return out
}

// write stores b, or holds it while the store fails: one log line when
// it starts failing, a retry every few seconds, a storage event once it
// works again; the backlog is bounded (the oldest batches go first).
func (c *core) write(ctx context.Context, now int64, b *store.Batch) {
	if b.Rows() > 0 {
		c.backlog = append(c.backlog, b)
		c.backRows += b.Rows()
	}
	for c.backRows > c.backlogLimit && len(c.backlog) > 1 {
		c.dropped += uint64(c.backlog[0].Rows())
		c.backRows -= c.backlog[0].Rows()
		c.backlog = c.backlog[1:]
	}
	if c.failSince != 0 && now < c.nextRetry {
		c.setStore(false)
		return
	}
	for len(c.backlog) > 0 {
		next := c.backlog[0]
		err := c.st.Write(ctx, c.mid, next)
		switch {
		case err == nil:
		case errPermanent(err):
			c.log.Printf("store refused a batch of %d rows, dropped: %v", next.Rows(), err)
			c.dropped += uint64(next.Rows())
		default:
			c.metrics.storeErrors.Inc()
			if c.failSince == 0 {
				c.failSince, c.failErr = now, oneLine(err)
				c.log.Printf("store write failed, probing goes on; holding up to %v of rows in memory, retrying every %v: %s", backlogSpan, retryEvery, c.failErr)
			}
			c.nextRetry = now + int64(retryEvery)
			c.setStore(false)
			return
		}
		c.backRows -= next.Rows()
		c.backlog = c.backlog[1:]
		if c.failSince != 0 {
			c.held += uint64(next.Rows())
		}
	}
	if c.failSince != 0 {
		ev := model.MonitorEvent{Kind: model.EventStorage, StartNs: c.failSince, EndNs: now, Stream: -1,
			Text: fmt.Sprintf("store unwritable for %v (%s): %d rows held in memory and written, %d dropped",
				time.Duration(now-c.failSince).Round(time.Second), c.failErr, c.held, c.dropped),
			Detail: map[string]float64{"duration_s": float64(now-c.failSince) / 1e9, "rows_held": float64(c.held), "rows_dropped": float64(c.dropped)}}
		c.log.Print(ev.Text)
		c.failSince, c.held = 0, 0
		if err := c.st.Write(ctx, c.mid, &store.Batch{Events: []model.MonitorEvent{ev}}); err != nil {
			c.events = append(c.events, ev) // with the next batch
		}
		c.mu.Lock()
		c.status.LastEvents = appendEvents(c.status.LastEvents, []model.MonitorEvent{ev})
		c.mu.Unlock()
	}
	c.setStore(true)
}

func (c *core) setStore(healthy bool) {
	c.metrics.backlog.Set(float64(c.backRows))
	c.mu.Lock()
	s := &c.status.Store
	s.Healthy, s.BacklogRows, s.DroppedRows = healthy, c.backRows, c.dropped
	if !healthy {
		s.LastError = c.failErr
	}
	c.mu.Unlock()
}

func (c *core) retain(ctx context.Context, now int64) {
	r := store.Retention{Raw: c.plan.KeepRaw.Age(), Rollups: c.plan.KeepRoll.Age(), Batch: store.DefaultRetention.Batch}
	if r.Raw == 0 && r.Rollups == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	d, err := c.st.Retain(rctx, r, now)
	if err != nil {
		c.log.Printf("retention: %v", oneLine(err))
		return
	}
	if d.Probes+d.Rollups+d.Counters > 0 {
		c.log.Printf("retention: deleted %d probes, %d counter samples, %d rollups", d.Probes, d.Counters, d.Rollups)
	}
}
