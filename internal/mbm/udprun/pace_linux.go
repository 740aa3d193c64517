package udprun

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// clock maps time.Time deadlines to CLOCK_MONOTONIC, the clock of
// clock_nanosleep's absolute sleeps.
type clock struct {
	t0    time.Time
	mono0 int64
}

func newClock() clock {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return clock{t0: time.Now(), mono0: ts.Nano()}
}

// waitUntil sleeps on an absolute deadline until spin before it, then
// spins: Go's timers can wake a millisecond late, an absolute
// clock_nanosleep with 1 ns timer slack wakes within tens of µs, and the
// spin takes the rest. Long waits are cut into 20 ms pieces to notice ctx.
func (c clock) waitUntil(ctx context.Context, deadline time.Time, spin time.Duration) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := time.Until(deadline)
		if d <= spin {
			break
		}
		wake := deadline.Add(-spin)
		if d > 20*time.Millisecond+spin {
			wake = time.Now().Add(20 * time.Millisecond)
		}
		ts := unix.NsecToTimespec(c.mono0 + int64(wake.Sub(c.t0)))
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err != nil && err != unix.EINTR {
			time.Sleep(time.Until(wake))
		}
	}
	for time.Now().Before(deadline) {
	}
	return ctx.Err()
}

// pinThread locks the sender to its thread with a 1 ns timer slack; the
// returned function undoes both.
func pinThread() func() {
	runtime.LockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err == nil {
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	}
	return func() {
		if err == nil {
			_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
		}
		runtime.UnlockOSThread()
	}
}
