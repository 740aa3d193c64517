//go:build !linux

package probe

import (
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/stamp"
)

// alarm, elsewhere than Linux, is Go's timer (up to a millisecond late;
// the scheduler's spin does not cover that).
type alarm struct {
	clock *stamp.Clock
	stop  chan struct{}
	once  sync.Once
}

func newAlarm(clock *stamp.Clock) (*alarm, error) {
	return &alarm{clock: clock, stop: make(chan struct{})}, nil
}

func (a *alarm) sleepUntil(ns int64) error {
	t := time.NewTimer(time.Duration(ns - a.clock.Now()))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-a.stop:
		return errAlarmClosed
	}
}

func (a *alarm) close() { a.once.Do(func() { close(a.stop) }) }
