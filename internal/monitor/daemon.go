// Package monitor is the `sonde monitor run` daemon: it runs the probers
// (internal/monitor/probe) and the interface counter reader
// (internal/ifstat), and once a second drains the probes, labels each with
// its load state, and writes one store batch (probes, counters, events);
// it rolls each minute up once its late replies can no longer come, runs
// the event detectors (internal/reliability) over the last minutes, holds
// a bounded backlog in memory while the store fails, and serves /metrics,
// /status and /healthz (docs/monitor.md, "The daemon").
package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/counters"
	"github.com/sonde-project/sonde/internal/ifstat"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/monitor/ship"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// Timings of the loop.
const (
	tick = time.Second
	// eventEvery is how often the detectors run over the recent window;
	// recentSpan is that window (a baseline step needs 5 steady minutes
	// on each side).
	eventEvery = 10 * time.Second
	recentSpan = 15 * time.Minute
	// maxRecent bounds the samples kept for the detectors (winSample:
	// about 10 MB; 15 minutes of 8 targets × 3 kinds × 100/s would be
	// 2.16 M): the window is the daemon's largest structure.
	maxRecent = 400_000
	// retryEvery is how often a failing store is tried again; backlogSpan
	// how much is held in memory meanwhile (at most maxBacklogRows).
	retryEvery     = 5 * time.Second
	backlogSpan    = 10 * time.Minute
	maxBacklogRows = 2_000_000
	retainEvery    = time.Hour
	// settle: an event ending this close to the newest final probe may
	// still grow, so it waits for the next pass.
	settle = 5 * time.Second
)

// GCPercent is the Go GC's target (debug.SetGCPercent) `sonde monitor run`
// sets unless GOGC is in its environment: the daemon keeps about 3.5 MB
// live at 8 × 10/s (the detectors' window, the minutes not rolled up, the
// ring, the store's Go side) and allocates about 0.26 MB a second, so at
// Go's default of 100 its heap reaches twice the live data between
// collections; at 25 a collection comes every few seconds, which costs
// no CPU the soak can see (0.61 % of a core at 25, 0.62 % at 50; anonymous
// memory at 5 minutes 7.4 against 8.3 MB: docs/monitor.md, "Memory").
const GCPercent = 25

// StoreCacheKiB is the SQLite page cache the daemon's store should open
// with (store.Options.CacheKiB): its writes append at the right edge of a
// few b-trees, so 256 KiB (64 pages) holds their paths with room for the
// hourly retention's deletes, where SQLite's default (2000 KiB per
// connection) was memory outside the Go heap for nothing: at 8 × 10/s,
// SQLite's allocator settles at 2.2 MB with 256 KiB, 3.3 MB with 512 KiB
// and 6.4 MB with the default (docs/monitor.md, "Memory").
const StoreCacheKiB = 256

// Daemon is a running monitor.
type Daemon struct {
	plan    *Plan
	st      store.Store
	mid     int64
	prober  *probe.Prober
	tracker *ifstat.Tracker
	src     counterSource
	ln      net.Listener
	log     *log.Logger
	version string
	core    *core
	watch   *watcher      // alerts and the dashboard's series
	ship    *ship.Shipper // nil without --ship
}

// Options are what the caller provides beside the plan.
type Options struct {
	Store   store.Store // open store (the caller closes it)
	Log     io.Writer   // one line per notable thing (default: discard)
	Version string      // sonde's version, recorded with each restart
}

// New opens everything the plan names: the interface counters, the
// monitor's identity and streams in the store, the probe sockets and
// monitor sessions, and the HTTP listener. Each error is one line; an
// unreachable target is not one (probing goes on and records loss). An
// error of the plan itself (an interface that does not exist, a listen
// address that cannot be bound) is a ConfigError; the rest (the store, a
// sonde server that cannot be reached) are failures at start.
func New(ctx context.Context, plan *Plan, opt Options) (*Daemon, error) {
	logw := opt.Log
	if logw == nil {
		logw = io.Discard
	}
	d := &Daemon{plan: plan, st: opt.Store, log: log.New(logw, "monitor: ", log.LstdFlags), version: opt.Version}
	ok := false
	defer func() {
		if !ok {
			d.closeAll()
		}
	}()
	var ifEvents *eventQueue
	var err error
	if plan.Interface != "" {
		src, err := ifstat.Open(plan.Interface)
		if err != nil {
			return nil, configErr(fmt.Errorf("--interface: %w", err))
		}
		d.src = src
		ifEvents = &eventQueue{}
		t, err := ifstat.NewTracker(ifstat.Config{Name: plan.Interface, UpBps: plan.UpBps, DownBps: plan.DownBps,
			MaxBps: max(src.SpeedBps(), 0), OnEvent: ifEvents.add})
		if err != nil {
			return nil, configErr(fmt.Errorf("--interface: %w", err))
		}
		d.tracker = t
	} else if plan.Counters != nil {
		ifEvents = &eventQueue{}
		if d.src, d.tracker, err = d.openRemoteCounters(plan, ifEvents); err != nil {
			return nil, configErr(fmt.Errorf("--counters: %w", err))
		}
	}
	mid, err := d.st.Monitor(ctx, store.Identity{Name: plan.Name, Labels: plan.Labels})
	if err != nil {
		return nil, err
	}
	d.mid = mid
	if _, err := d.st.Streams(ctx, mid, plan.Streams); err != nil {
		return nil, err
	}
	if plan.Ship != "" {
		// The local store stays the source of truth; its retention keeps
		// what the fleet store has not confirmed.
		timeout := time.Duration(plan.Timeout)
		d.ship, err = ship.New(ctx, d.st, ship.Config{URL: plan.Ship, Token: plan.ShipToken, Name: plan.Name, Monitor: mid,
			Raw: plan.ShipRaw, RawSettle: max(2*time.Minute, 8*timeout), Log: d.log})
		if err != nil {
			return nil, err
		}
		d.st = d.ship.Guard(d.st)
	}
	cfgs := make([]probe.StreamConfig, len(plan.Probes))
	copy(cfgs, plan.Probes)
	sessions := map[string]probe.SessionOpener{}
	for i, server := range plan.Servers {
		if server == "" {
			continue
		}
		if sessions[server] == nil {
			op, err := probe.HTTPSessions(server, plan.Token, nil)
			if err != nil {
				return nil, configErr(fmt.Errorf("--target %s: %w", server, err))
			}
			sessions[server] = op
		}
		cfgs[i].Sessions = sessions[server]
	}
	d.prober, err = probe.New(ctx, probe.Config{Streams: cfgs, Ring: probe.NewRing(ringSize(plan))})
	if err != nil {
		return nil, err
	}
	if plan.Listen != "off" {
		if d.ln, err = net.Listen("tcp", plan.Listen); err != nil {
			return nil, configErr(fmt.Errorf("--listen: %w", err))
		}
	}
	d.core = newCore(plan, d.st, mid, d.prober.Ring(), d.log)
	d.core.tracker = d.tracker
	d.core.ifEvents = ifEvents
	d.core.stats = d.prober.Stats
	d.core.version = opt.Version
	if d.ship != nil {
		d.core.metrics.reg.MustRegister(d.ship.Collector())
		d.core.shipStatus = d.ship.Status
	}
	if d.watch, err = newWatcher(plan, d.log); err != nil {
		return nil, configErr(err)
	}
	ok = true
	return d, nil
}

// Addr is the HTTP endpoints' address (nil with --listen off).
func (d *Daemon) Addr() net.Addr {
	if d.ln == nil {
		return nil
	}
	return d.ln.Addr()
}

func (d *Daemon) closeAll() {
	if d.prober != nil {
		d.prober.Close()
	}
	if d.src != nil {
		d.src.Close()
	}
	if d.ln != nil {
		d.ln.Close()
	}
}

// Run records the restart, starts probing and runs the loop until ctx
// ends; then it stops the probers, writes what is left (rolling up every
// open minute) and returns. It returns an error only when the store
// refuses the restart record at the start.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.closeAll()
	c := d.core
	now := d.prober.Clock().Now()
	if err := c.restart(ctx, now); err != nil {
		return err
	}
	d.watch.restore(ctx, c, now)
	var wg sync.WaitGroup
	ictx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	if d.tracker != nil {
		wg.Add(1)
		go func() { defer wg.Done(); _ = ifstat.Run(ictx, d.src, d.tracker) }()
	}
	var srv *http.Server
	if d.ln != nil {
		srv = &http.Server{Handler: d.watch.handler(c, d.plan.Alerts.Rules), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 16 << 10}
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(d.ln) }()
	}
	d.watch.start(ictx, &wg)
	if d.ship != nil {
		wg.Add(1)
		go func() { defer wg.Done(); d.ship.Run(ictx) }()
	}
	d.prober.Start()
	d.log.Printf("probing %d streams of %d targets at %g/s; store %s", len(d.plan.Streams), len(d.plan.Targets), d.plan.Rate, d.st.Location())
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			d.prober.Close()
			// The last second's samples, every open minute rolled up: a
			// stop loses nothing measured (a late reply still on its way
			// is counted lost).
			wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
			c.step(wctx, d.prober.Clock().Now(), true)
			wcancel()
			d.watch.pass(c, d.prober.Clock().Now())
			if srv != nil {
				sctx, scancel := context.WithTimeout(context.Background(), time.Second)
				_ = srv.Shutdown(sctx)
				scancel()
			}
			return nil
		case <-t.C:
			now := d.prober.Clock().Now()
			c.step(ctx, now, false)
			d.watch.pass(c, now)
		}
	}
}

// ringSize holds a minute of the plan's samples (the loop drains once a
// second; only a stalled store delays it), at least 4 Ki and at most
// probe.DefaultRingSize: the default ring, sized for 8 targets × 3 kinds ×
// 100/s, was 3.5 MB of the heap at 1 target × 100/s, where a minute is
// 6,000 samples (336 kB).
func ringSize(p *Plan) int {
	n := int(float64(len(p.Streams)) * p.Rate * 60)
	return min(max(n, 4096), probe.DefaultRingSize)
}

// counterSource is where the tracker's readings come from: a local
// interface (ifstat.Sysfs) or another box's counters (internal/counters).
type counterSource interface {
	ifstat.Source
	Close() error
}

// openRemoteCounters opens another box's counters. It reads them once: a
// failure (agent unreachable, wrong credentials, unknown interface) is one
// logged line and probing goes on, the reader retrying every interval
// (ifstat.Run records when they become readable). Their read interval sets
// the tracker's, and the window is at least two reads; an event says so,
// since coarser reads make coarser load states.
func (d *Daemon) openRemoteCounters(plan *Plan, q *eventQueue) (counterSource, *ifstat.Tracker, error) {
	spec := *plan.Counters
	src, err := counters.Open(spec)
	if err != nil {
		return nil, nil, err
	}
	if _, _, err := src.Read(); err != nil {
		d.log.Printf("--counters: %v (probing goes on; load states are unknown until the counters are readable)", err)
		if _, _, err2 := src.Read(); err2 == nil {
			d.log.Printf("--counters: %s readable", spec)
		}
	}
	window := max(time.Second, 2*spec.Interval)
	t, err := ifstat.NewTracker(ifstat.Config{Name: spec.String(), Interval: spec.Interval, Window: window,
		Sustain: max(3*time.Second, 3*spec.Interval), UpBps: plan.UpBps, DownBps: plan.DownBps,
		MaxBps: src.SpeedBps(), TxIsDown: spec.TxIsDown, OnEvent: q.add})
	if err != nil {
		src.Close()
		return nil, nil, err
	}
	now := time.Now().UnixNano()
	q.add(model.MonitorEvent{Kind: model.EventCounters, StartNs: now, EndNs: now, Stream: -1, Flags: []string{"remote"},
		Text: fmt.Sprintf("load states from %s, read every %v: rates over %v windows (local counters: 100 ms reads, 1 s windows); an agent that refreshes less often makes them coarser still, and is reported when found",
			spec, spec.Interval, window),
		Detail: map[string]float64{"interval_ms": float64(spec.Interval) / 1e6, "window_ms": float64(window) / 1e6}})
	return src, t, nil
}

// eventQueue collects events from other goroutines (ifstat's reader) for
// the next batch; bounded, the oldest kept.
type eventQueue struct {
	mu  sync.Mutex
	evs []model.MonitorEvent
}

func (q *eventQueue) add(e model.MonitorEvent) {
	q.mu.Lock()
	if len(q.evs) < 1000 {
		q.evs = append(q.evs, e)
	}
	q.mu.Unlock()
}

func (q *eventQueue) take() []model.MonitorEvent {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.evs
	q.evs = nil
	return e
}

// errPermanent tells a batch the store will never take (bad input) from
// a failing store.
func errPermanent(err error) bool {
	return errors.Is(err, store.ErrBadInput) || errors.Is(err, store.ErrUnknownStream)
}

// reliabilityConfig is the detectors' configuration for the plan.
func reliabilityConfig(p *Plan, upBps, downBps float64) reliability.Config {
	var rc reliability.Config
	rc.Profiles = p.Profiles
	rc.ProbeIntervalNs = int64(float64(time.Second) / p.Rate)
	rc.Loaded.UpBps, rc.Loaded.DownBps = upBps, downBps
	// The detectors read events only, never the exact percentiles: one
	// raw value kept per stream (0 would mean the default, 4 Mi) spares
	// three arrays of the window's size built and dropped every pass.
	rc.ExactLimit = 1
	rc.Loaded.MaxSamples = maxRecent
	return rc
}

// ConfigError is an error of the plan New was given (a flag's value or a
// file it names), as opposed to a failure of what the plan reaches at
// start: `sonde monitor run` exits 2 for the first, 1 for the second.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(err error) error { return &ConfigError{Err: err} }
