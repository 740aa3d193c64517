package ifstat

import (
	"context"
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// Source reads an interface's raw rx and tx byte counters (Sysfs on Linux).
type Source interface {
	Read() (rx, tx uint64, err error)
}

// Run reads src every Interval on absolute deadlines (start + k·Interval,
// so the period does not drift; a read that comes late skips the deadlines
// it missed rather than bunching up) and feeds t, until ctx ends. One
// timer, one wake-up per read. A failing read is one event when it starts
// failing and one when it works again; Run goes on trying.
func Run(ctx context.Context, src Source, t *Tracker) error {
	iv := t.cfg.Interval
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var failing error
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		rx, tx, err := src.Read()
		now := time.Now()
		switch {
		case err != nil && failing == nil:
			t.deliver([]model.MonitorEvent{t.event(now.UnixNano(),
				fmt.Sprintf("%s: counters unreadable: %v", t.name(), err), "unreadable", nil)})
		case err == nil && failing != nil:
			t.deliver([]model.MonitorEvent{t.event(now.UnixNano(),
				fmt.Sprintf("%s: counters readable again", t.name()), "readable", nil)})
		}
		failing = err
		if err == nil {
			t.Observe(now.UnixNano(), rx, tx)
		}
		k := now.Sub(start)/iv + 1
		timer.Reset(time.Until(start.Add(k * iv)))
	}
}
