package pace

import (
	"context"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// WaitUntil sleeps until spin before deadline and spins the rest, or
// returns ctx's error. It sleeps with clock_nanosleep on an absolute
// CLOCK_MONOTONIC deadline (the calling thread should be pinned with
// PinThread, for its 1 ns timer slack), because Go's timers can wake up
// to a millisecond late; long waits are cut into 20 ms pieces to notice
// ctx.
func WaitUntil(ctx context.Context, clock Mono, deadline time.Time, spin time.Duration) error {
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
		ts := unix.NsecToTimespec(clock.MonoAt(wake))
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err != nil && err != unix.EINTR {
			time.Sleep(time.Until(wake)) // not expected on Linux; degrade to Go's timer
		}
	}
	for time.Now().Before(deadline) {
	}
	return ctx.Err()
}

// PinThread locks the calling goroutine to its thread and sets the
// thread's timer slack to 1 ns, so sleeps end on time; the returned
// function undoes both.
func PinThread() func() {
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
