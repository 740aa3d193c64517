// Package pace holds a sending thread to a schedule: it sleeps until just
// before each deadline and spins the rest, so that packets leave within
// microseconds of their times. The STAMP sender (internal/stamp) and the
// MBM UDP run (internal/mbm/udprun) pace with it.
package pace

import "time"

// Mono maps a Go time reading to CLOCK_MONOTONIC nanoseconds, the clock of
// the kernel's absolute sleeps; *stamp.Clock is one.
type Mono interface {
	MonoAt(t time.Time) int64
}
