//go:build !linux

package pace

import (
	"context"
	"runtime"
	"time"
)

// WaitUntil sleeps with Go's timer until spin before deadline, then spins;
// clock is not needed here.
func WaitUntil(ctx context.Context, _ Mono, deadline time.Time, spin time.Duration) error {
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

// PinThread locks the calling goroutine to its thread; the returned
// function unlocks it.
func PinThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
