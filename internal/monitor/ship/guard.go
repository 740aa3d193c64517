package ship

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// Guard returns st with a retention that deletes locally only what the
// fleet store has confirmed and the retention allows. Rows not shipped
// are kept past their age up to a hard cap of twice it (raw samples when
// shipped, rollups); what the cap deletes unshipped is logged and
// recorded as a storage event. Events and restarts are kept until shipped.
func (s *Shipper) Guard(st store.Store) store.Store { return &guarded{Store: st, s: s} }

type guarded struct {
	store.Store
	s *Shipper
}

// hold is what retention must keep: the rows past each watermark.
func (s *Shipper) hold(ctx context.Context) (store.Hold, error) {
	h := store.Hold{Probes: math.MaxInt64, Counters: math.MaxInt64}
	after := func(t store.Table) (int64, error) {
		mark, ok, err := s.local.ShipMark(ctx, s.dest, s.cfg.Monitor, t)
		switch {
		case err != nil:
			return 0, err
		case !ok:
			return math.MinInt64, nil
		}
		return mark, nil
	}
	var err error
	if h.Rollups, err = after(store.TableRollups); err != nil {
		return h, err
	}
	if h.Restarts, err = after(store.TableRestarts); err != nil {
		return h, err
	}
	if h.EventID, err = after(store.TableEvents); err != nil {
		return h, err
	}
	if s.cfg.Raw {
		if h.Probes, err = after(store.TableProbes); err != nil {
			return h, err
		}
		if h.Counters, err = after(store.TableCounters); err != nil {
			return h, err
		}
	}
	// Hold keeps rows at or after its times; a mark is the newest shipped.
	for _, v := range []*int64{&h.Rollups, &h.Restarts, &h.Probes, &h.Counters} {
		if *v != math.MinInt64 && *v != math.MaxInt64 {
			*v++
		}
	}
	return h, nil
}

func (g *guarded) Retain(ctx context.Context, r store.Retention, nowNs int64) (store.Deleted, error) {
	h, err := g.s.hold(ctx)
	if err != nil {
		return store.Deleted{}, fmt.Errorf("retention: shipping watermarks: %w", err)
	}
	r.Hold = &h
	d, err := g.Store.Retain(ctx, r, nowNs)
	if err != nil {
		return d, err
	}
	// The hard cap: whatever is left past twice the age was never
	// confirmed by the fleet store.
	hard := store.Retention{Batch: r.Batch}
	if g.s.cfg.Raw && r.Raw > 0 {
		hard.Raw = 2 * r.Raw
	}
	if r.Rollups > 0 {
		hard.Rollups = 2 * r.Rollups
	}
	if hard.Raw == 0 && hard.Rollups == 0 {
		return d, nil
	}
	lost, err := g.Store.Retain(ctx, hard, nowNs)
	d.Probes, d.Counters, d.Rollups = d.Probes+lost.Probes, d.Counters+lost.Counters, d.Rollups+lost.Rollups
	n := lost.Probes + lost.Counters + lost.Rollups
	if n > 0 {
		ev := model.MonitorEvent{Kind: model.EventStorage, StartNs: nowNs, EndNs: nowNs, Stream: -1,
			Text: fmt.Sprintf("retention deleted %d probes, %d counter samples and %d rollups the fleet store %s never confirmed (kept to twice their age, %v raw, %v rollups)",
				lost.Probes, lost.Counters, lost.Rollups, g.s.dest, time.Duration(hard.Raw), time.Duration(hard.Rollups)),
			Detail: map[string]float64{"probes": float64(lost.Probes), "counters": float64(lost.Counters), "rollups": float64(lost.Rollups)}}
		g.s.cfg.Log.Print(ev.Text)
		g.s.mu.Lock()
		g.s.status.UnshippedDeleted += n
		g.s.mu.Unlock()
		if werr := g.Store.Write(ctx, g.s.cfg.Monitor, &store.Batch{Events: []model.MonitorEvent{ev}}); werr != nil {
			g.s.cfg.Log.Printf("record the loss: %v", werr)
		}
	}
	return d, err
}
