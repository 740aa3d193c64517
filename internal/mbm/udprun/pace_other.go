//go:build !linux

package udprun

import (
	"context"
	"runtime"
	"time"
)

type clock struct{}

func newClock() clock { return clock{} }

// waitUntil sleeps with Go's timer, then spins.
func (clock) waitUntil(ctx context.Context, deadline time.Time, spin time.Duration) error {
	if d := time.Until(deadline) - spin; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	for time.Now().Before(deadline) {
	}
	return ctx.Err()
}

func pinThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
