// Package ship sends a monitor's rows from its own store (the source of
// truth) to a fleet store: per table a watermark kept in the local store,
// bounded idempotent shipments (a replayed one inserts nothing twice), a
// backoff while the fleet store is down or refuses, the lag as metrics
// and status, and a retention guard that deletes locally only what the
// fleet store has confirmed (docs/fleet.md, "Shipping").
package ship

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// Defaults of Config.
const (
	DefaultInterval = 10 * time.Second
	DefaultMaxRows  = 5000
	// minBackoff and maxBackoff bound the wait after a failed pass; a
	// refusal (revoked, wrong token, clock off) starts at refusedBackoff:
	// it needs an operator, not a retry.
	minBackoff     = 2 * time.Second
	maxBackoff     = 5 * time.Minute
	refusedBackoff = time.Minute
	// maxPerPass bounds the shipments of one pass, so status and the lag
	// refresh while a large backlog ships.
	maxPerPass = 50
	// rewind is how far before a local storage failure the time marks go
	// back: rows held in memory meanwhile were written after rows of
	// later times (rollups lag their minute by the late horizon).
	rewind = 5 * time.Minute
	// pendingLimit bounds the count of pending rows per table.
	pendingLimit = 10_000_000
	openTimeout  = 30 * time.Second
)

// Sink is where shipments go: a fleet store.
type Sink interface {
	Accept(ctx context.Context, b *store.Shipment) error
	Close() error
}

// Config says what to ship where.
type Config struct {
	URL     string // the fleet store
	Token   string // the monitor's token (empty: enrolled without one)
	Name    string // the monitor's name
	Monitor int64  // its ID in the local store
	// Raw also ships probe samples and interface counters.
	Raw bool
	// RawSettle: probes and counters younger than this wait (a lost
	// probe's late sample may still replace it locally).
	RawSettle time.Duration
	// KeepRaw and KeepRollups are the local retention ages (0: forever):
	// rows not shipped are kept past them, up to twice the age.
	KeepRaw, KeepRollups time.Duration
	Interval             time.Duration // between passes when caught up
	MaxRows              int           // rows per shipment
	Log                  *log.Logger
	// Open opens the sink (default: store.Open(URL)).
	Open func(ctx context.Context) (Sink, error)
	// Now is the local clock (default time.Now).
	Now func() int64
}

// tableState is one table's shipping state.
type tableState struct {
	t       store.Table
	window  int64 // rows read per shipment span this (time tables)
	maxWin  int64
	settle  int64
	pending int64
	lag     float64
	shipped uint64
}

// Shipper ships one monitor's rows.
type Shipper struct {
	cfg      Config
	local    store.Store
	dest     string
	instance string
	tables   []*tableState
	sink     Sink
	lastCap  store.CapacityRow // newest capacity row shipped (re-sent when it changes)
	haveCap  bool

	mu     sync.Mutex
	status Status
	lagAt  int64 // when the tables' lag was counted
}

// Status is the shipper's state for /status and /metrics.
type Status struct {
	Dest      string        `json:"dest"`
	Healthy   bool          `json:"healthy"`
	LastError string        `json:"last_error,omitempty"`
	LastOKNs  int64         `json:"last_ok_ns,omitempty"`
	Tables    []TableStatus `json:"tables"`
	// Errors counts failed passes; UnshippedDeleted the rows retention
	// deleted before the fleet store had them (past the hard cap).
	Errors           uint64 `json:"errors"`
	UnshippedDeleted int64  `json:"unshipped_deleted_rows"`
}

// TableStatus is one table's lag.
type TableStatus struct {
	Table       store.Table `json:"table"`
	PendingRows int64       `json:"pending_rows"` // local rows past the watermark (counted up to 10M)
	LagSeconds  float64     `json:"lag_seconds"`  // age of the oldest row not shipped (0: none)
	ShippedRows uint64      `json:"shipped_rows"` // since the daemon started
}

// New checks cfg and reads the local instance ID (generated at the first
// start and kept in the local store).
func New(ctx context.Context, local store.Store, cfg Config) (*Shipper, error) {
	loc, err := store.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("--ship: %s", err)
	}
	if len(cfg.Token) > store.MaxTokenLen {
		return nil, fmt.Errorf("--ship-token: over %d bytes", store.MaxTokenLen)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MaxRows <= 0 || cfg.MaxRows > store.MaxBatchRows {
		cfg.MaxRows = DefaultMaxRows
	}
	if cfg.Log == nil {
		cfg.Log = log.New(io.Discard, "", 0)
	}
	if cfg.Now == nil {
		cfg.Now = func() int64 { return time.Now().UnixNano() }
	}
	if cfg.Open == nil {
		url := cfg.URL
		cfg.Open = func(ctx context.Context) (Sink, error) { return store.Open(ctx, url, store.Options{}) }
	}
	id, err := local.InstanceID(ctx)
	if err != nil {
		return nil, err
	}
	s := &Shipper{cfg: cfg, local: local, dest: loc.String(), instance: id}
	add := func(t store.Table, window, settle time.Duration) {
		s.tables = append(s.tables, &tableState{t: t, window: int64(window), maxWin: int64(window), settle: int64(settle)})
	}
	// Restarts and capacities first: a report reads them with the rows.
	add(store.TableRestarts, 100*365*24*time.Hour, 0)
	add(store.TableCapacities, 0, 0)
	add(store.TableRollups, 6*time.Hour, 0)
	add(store.TableEvents, 0, 0)
	if cfg.Raw {
		add(store.TableCounters, time.Hour, cfg.RawSettle)
		add(store.TableProbes, 10*time.Minute, cfg.RawSettle)
	}
	s.status.Dest = s.dest
	return s, nil
}

// Instance is the local instance ID the shipments carry.
func (s *Shipper) Instance() string { return s.instance }

// Status returns a copy of the shipper's state.
func (s *Shipper) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.status
	st.Tables = slices.Clone(st.Tables)
	return st
}

// Run ships until ctx ends: a pass every Interval when caught up, at once
// when a pass left rows behind, after a backoff when one failed.
func (s *Shipper) Run(ctx context.Context) {
	defer func() {
		if s.sink != nil {
			s.sink.Close()
		}
	}()
	backoff := time.Duration(0)
	failing := ""
	var failSince int64
	for {
		more, err := s.Pass(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := s.cfg.Interval
		switch {
		case err != nil:
			msg := err.Error()
			if msg != failing {
				s.cfg.Log.Printf("ship to %s failed, rows stay in the local store and ship when it works again: %s", s.dest, msg)
				failing = msg
			}
			if failSince == 0 {
				failSince = s.cfg.Now()
			}
			start := minBackoff
			if errors.Is(err, store.ErrRefused) {
				start = refusedBackoff
			}
			backoff = min(max(2*backoff, start), maxBackoff)
			wait = backoff
		default:
			if failSince != 0 {
				s.cfg.Log.Printf("ship to %s works again after %v", s.dest, time.Duration(s.cfg.Now()-failSince).Round(time.Second))
			}
			failing, failSince, backoff = "", 0, 0
			if more {
				wait = 0
			}
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// Pass ships what is pending, up to maxPerPass shipments; more says rows
// are left. It refreshes the status either way.
func (s *Shipper) Pass(ctx context.Context) (more bool, err error) {
	defer func() { s.refresh(ctx, more, err) }()
	if s.sink == nil {
		octx, cancel := context.WithTimeout(ctx, openTimeout)
		sink, err := s.cfg.Open(octx)
		cancel()
		if err != nil {
			return false, err
		}
		s.sink = sink
	}
	streams, index, err := s.streams(ctx)
	if err != nil {
		return false, err
	}
	budget := maxPerPass
	for _, ts := range s.tables {
		for budget > 0 {
			n, err := s.shipOne(ctx, ts, streams, index)
			if err != nil {
				return false, fmt.Errorf("%s: %w", ts.t, err)
			}
			if n == 0 {
				break
			}
			budget--
		}
		if budget == 0 {
			return true, nil
		}
	}
	return false, nil
}

// streams returns the monitor's local streams by store ID order and the
// index of each store ID in that list (what shipped rows carry).
func (s *Shipper) streams(ctx context.Context) ([]model.MonitorStream, map[int32]int32, error) {
	m, err := s.local.ListStreams(ctx, s.cfg.Monitor)
	if err != nil {
		return nil, nil, err
	}
	list, index := store.OrderStreams(m)
	return list, index, nil
}

// errFull stops a read whose window holds more rows than a shipment may.
var errFull = errors.New("window full")

// shipOne ships one shipment of table ts and returns its rows (0: none
// pending or settled).
func (s *Shipper) shipOne(ctx context.Context, ts *tableState, streams []model.MonitorStream, index map[int32]int32) (int, error) {
	mark, ok, err := s.local.ShipMark(ctx, s.dest, s.cfg.Monitor, ts.t)
	if err != nil {
		return 0, err
	}
	if !ok {
		mark = math.MinInt64
	}
	sh := &store.Shipment{Monitor: s.cfg.Name, Token: s.cfg.Token, Instance: s.instance, Streams: streams}
	var newMark int64
	switch ts.t {
	case store.TableEvents:
		evs, err := s.local.EventsAfter(ctx, s.cfg.Monitor, mark, s.cfg.MaxRows)
		if err != nil || len(evs) == 0 {
			return 0, err
		}
		var storage []int64
		for _, e := range evs {
			ev := e.Event
			if ev.Stream >= 0 {
				i, ok := index[ev.Stream]
				if !ok {
					return 0, fmt.Errorf("event %d names stream %d, not the monitor's", e.ID, ev.Stream)
				}
				ev.Stream = i
			}
			if ev.Kind == model.EventStorage {
				storage = append(storage, ev.StartNs)
			}
			sh.Batch.Events = append(sh.Batch.Events, ev)
		}
		newMark = evs[len(evs)-1].ID
		if err := s.send(ctx, ts, sh, newMark); err != nil {
			return 0, err
		}
		// The local store failed from these times: rows it held in
		// memory meanwhile landed behind the time marks; ship them again
		// (the fleet store skips those it has).
		for _, from := range storage {
			if err := s.rewind(ctx, from-int64(rewind)); err != nil {
				return 0, err
			}
		}
		return len(evs), nil
	case store.TableCapacities:
		from := mark
		if !ok {
			from = math.MinInt64
		}
		rows, err := s.local.Capacities(ctx, s.cfg.Monitor, from, math.MaxInt64)
		if err != nil {
			return 0, err
		}
		// Capacities holds the row in effect at from (the one at the mark)
		// and those after: the newest is sent again only when it changed
		// (a learnt capacity replaces the row that had it unknown).
		rows = slices.DeleteFunc(rows, func(r store.CapacityRow) bool { return r.FromNs < mark })
		if len(rows) == 0 || (len(rows) == 1 && s.haveCap && rows[0] == s.lastCap) {
			return 0, nil
		}
		rows = rows[:min(len(rows), s.cfg.MaxRows)]
		sh.Capacities = rows
		newMark = rows[len(rows)-1].FromNs
		if err := s.send(ctx, ts, sh, newMark); err != nil {
			return 0, err
		}
		s.lastCap, s.haveCap = rows[len(rows)-1], true
		return len(rows), nil
	}
	// Tables by time: from the first row past the mark, a window of time
	// that holds at most MaxRows rows (halved until it does, doubled again
	// after a shipment under half full), up to now
	// less the table's settling time. The new mark is the newest row
	// shipped, not the window's end: a row of a time inside the window
	// may still be written (a minute's rollup comes after the minute).
	first, ok, err := s.local.NextAfter(ctx, s.cfg.Monitor, ts.t, mark)
	if err != nil || !ok {
		return 0, err
	}
	upto := s.cfg.Now() - ts.settle
	if first > upto {
		return 0, nil
	}
	for {
		end := upto
		if first <= upto-ts.window {
			end = first + ts.window - 1
		}
		*sh = store.Shipment{Monitor: s.cfg.Name, Token: s.cfg.Token, Instance: s.instance, Streams: streams}
		newest, err := s.read(ctx, ts.t, first, end, index, sh)
		if errors.Is(err, errFull) && ts.window > 1 {
			ts.window = max(ts.window/2, 1)
			continue
		}
		if err != nil {
			return 0, err
		}
		if err := s.send(ctx, ts, sh, max(newest, first)); err != nil {
			return 0, err
		}
		if sh.Rows() < s.cfg.MaxRows/2 {
			ts.window = min(ts.window*2, ts.maxWin) // room for twice as long
		}
		return max(sh.Rows(), 1), nil
	}
}

// read fills sh with the rows of table t in [from, to], mapping store
// stream IDs to indexes, and returns the newest row's time; errFull past
// MaxRows.
func (s *Shipper) read(ctx context.Context, t store.Table, from, to int64, index map[int32]int32, sh *store.Shipment) (int64, error) {
	n := 0
	newest := int64(math.MinInt64)
	row := func(at int64) error {
		newest = max(newest, at)
		if n++; n > s.cfg.MaxRows {
			return errFull
		}
		return nil
	}
	stream := func(id int32) (int32, error) {
		i, ok := index[id]
		if !ok {
			return 0, fmt.Errorf("row of stream %d, not the monitor's", id)
		}
		return i, nil
	}
	mid, end := s.cfg.Monitor, to+1
	var err error
	switch t {
	case store.TableRollups:
		err = s.local.Rollups(ctx, mid, from, end, func(r store.Rollup) (err error) {
			if r.Stream, err = stream(r.Stream); err != nil {
				return err
			}
			sh.Batch.Rollups = append(sh.Batch.Rollups, r)
			return row(r.MinuteNs)
		})
	case store.TableProbes:
		err = s.local.Probes(ctx, mid, from, end, func(p model.ProbeSample) (err error) {
			if p.Stream, err = stream(p.Stream); err != nil {
				return err
			}
			sh.Batch.Probes = append(sh.Batch.Probes, p)
			return row(p.SentNs)
		})
	case store.TableCounters:
		err = s.local.Counters(ctx, mid, from, end, func(c model.CounterSample) error {
			sh.Batch.Counters = append(sh.Batch.Counters, c)
			return row(c.TimeNs)
		})
	case store.TableRestarts:
		var rs []store.RestartRow
		if rs, err = s.local.Restarts(ctx, mid, from, end); err == nil {
			sh.Restarts = rs
			for _, r := range rs {
				if err = row(r.TimeNs); err != nil {
					break
				}
			}
		}
	default:
		err = fmt.Errorf("no reader for table %s", t)
	}
	return newest, err
}

// send hands sh to the sink and, once it confirmed, moves the mark. A
// crash between the two ships sh again at the next start: the fleet
// store inserts nothing twice.
func (s *Shipper) send(ctx context.Context, ts *tableState, sh *store.Shipment, mark int64) error {
	if sh.Rows() > 0 {
		if err := s.sink.Accept(ctx, sh); err != nil {
			return err
		}
	}
	if err := s.local.SetShipMark(ctx, s.dest, s.cfg.Monitor, ts.t, mark); err != nil {
		return err
	}
	s.mu.Lock()
	ts.shipped += uint64(sh.Rows())
	s.mu.Unlock()
	return nil
}

// rewind moves the time marks back to at most to.
func (s *Shipper) rewind(ctx context.Context, to int64) error {
	for _, ts := range s.tables {
		switch ts.t {
		case store.TableRollups, store.TableCounters, store.TableProbes:
		default:
			continue
		}
		mark, ok, err := s.local.ShipMark(ctx, s.dest, s.cfg.Monitor, ts.t)
		if err != nil {
			return err
		}
		if ok && mark > to {
			if err := s.local.SetShipMark(ctx, s.dest, s.cfg.Monitor, ts.t, to); err != nil {
				return err
			}
		}
	}
	return nil
}

// refresh recomputes the health, and the lag of every table unless a
// backlog is shipping and the lag is younger than a pass interval
// (counting a day of raw rows after every pass would slow it down).
func (s *Shipper) refresh(ctx context.Context, more bool, passErr error) {
	now := s.cfg.Now()
	s.mu.Lock()
	if passErr != nil {
		s.status.Healthy, s.status.LastError = false, oneLine(passErr)
		s.status.Errors++
	} else {
		s.status.Healthy, s.status.LastError, s.status.LastOKNs = true, "", now
	}
	fresh := more && passErr == nil && now-s.lagAt < int64(s.cfg.Interval)
	s.mu.Unlock()
	if fresh {
		return
	}
	var tables []TableStatus
	for _, ts := range s.tables {
		st := TableStatus{Table: ts.t}
		mark, ok, err := s.local.ShipMark(ctx, s.dest, s.cfg.Monitor, ts.t)
		if err == nil {
			if !ok {
				mark = math.MinInt64
			}
			if ts.t == store.TableCapacities && ok {
				mark-- // the newest row is re-sent when it changes
			}
			st.PendingRows, _ = s.local.CountAfter(ctx, s.cfg.Monitor, ts.t, mark, pendingLimit)
			if ts.t == store.TableCapacities && ok && st.PendingRows > 0 {
				st.PendingRows-- // the row at the mark has shipped
			}
			if st.PendingRows > 0 {
				st.LagSeconds = s.lagOf(ctx, ts.t, mark, now)
			}
		}
		s.mu.Lock()
		st.ShippedRows = ts.shipped
		s.mu.Unlock()
		tables = append(tables, st)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Tables, s.lagAt = tables, now
}

// lagOf is the age in seconds of the oldest row of t past mark.
func (s *Shipper) lagOf(ctx context.Context, t store.Table, mark, now int64) float64 {
	var at int64
	if t == store.TableEvents {
		evs, err := s.local.EventsAfter(ctx, s.cfg.Monitor, mark, 1)
		if err != nil || len(evs) == 0 {
			return 0
		}
		at = evs[0].Event.EndNs
	} else {
		v, ok, err := s.local.NextAfter(ctx, s.cfg.Monitor, t, mark)
		if err != nil || !ok {
			return 0
		}
		at = v
		if t == store.TableRollups {
			at += int64(time.Minute) // a minute's rollup exists once it ended
		}
	}
	return max(float64(now-at)/1e9, 0)
}

func oneLine(err error) string {
	msg := err.Error()
	for i := 0; i < len(msg); i++ {
		if msg[i] == '\n' {
			return msg[:i]
		}
	}
	return msg
}
