package stamp

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Timestamp is a 64-bit NTP timestamp (RFC 5905): seconds since 1900 in the
// upper 32 bits, the binary fraction of a second in the lower 32.
type Timestamp uint64

// ntpEpochOffset is the seconds from 1900-01-01 to 1970-01-01.
const ntpEpochOffset = 2208988800

// TimestampFromNs converts nanoseconds since the Unix epoch.
func TimestampFromNs(ns int64) Timestamp {
	sec := ns / 1e9
	frac := ns % 1e9
	if frac < 0 {
		sec--
		frac += 1e9
	}
	// Round to nearest: (frac << 32) / 1e9 fits in uint64 for frac < 1e9.
	f := (uint64(frac)<<32 + 5e8) / 1e9
	s := uint64(sec + ntpEpochOffset)
	if f >= 1<<32 {
		s, f = s+1, f-1<<32
	}
	return Timestamp(s<<32 | f)
}

// Ns converts back to nanoseconds since the Unix epoch. NTP era 0 only
// (until 2036), as every STAMP implementation assumes today.
func (t Timestamp) Ns() int64 {
	sec := int64(t>>32) - ntpEpochOffset
	frac := (uint64(t&0xffffffff)*1e9 + 1<<31) >> 32
	return sec*1e9 + int64(frac)
}

// Clock gives the timestamps a sonde endpoint writes into STAMP packets:
// the kernel's CLOCK_MONOTONIC plus a fixed epoch taken once at start, so
// they read as UTC yet never step when the wall clock is set (a step during
// a run would corrupt every delay). Two Clocks on the same host (same boot)
// differ exactly by the difference of their epochs, which lets a sender
// measure one-way delay without estimation against a reflector on the same
// host or in a lab namespace.
type Clock struct {
	t0    time.Time // Go's reading at start, for its monotonic part
	mono0 int64     // CLOCK_MONOTONIC at t0, ns
	epoch int64     // wall − monotonic at t0, ns
}

// NewClock anchors a clock to now.
func NewClock() *Clock {
	// Read the kernel's monotonic clock between two Go readings and keep
	// the tightest bracket, so mono0 and t0 describe the same instant to
	// well under a microsecond.
	best := time.Duration(1 << 62)
	var c Clock
	for range 5 {
		a := time.Now()
		mono := monotonicNs()
		b := time.Now()
		if d := b.Sub(a); d < best {
			best = d
			c.t0 = a.Add(d / 2)
			c.mono0 = mono
			c.epoch = c.t0.UnixNano() - c.mono0
		}
	}
	return &c
}

// Now returns the current time in nanoseconds (Unix epoch).
func (c *Clock) Now() int64 { return c.At(time.Now()) }

// At converts a Go time reading (which carries the monotonic clock) to the
// clock's nanoseconds.
func (c *Clock) At(t time.Time) int64 { return c.mono0 + int64(t.Sub(c.t0)) + c.epoch }

// MonoAt returns CLOCK_MONOTONIC (ns) at the Go time t (pace.Mono).
func (c *Clock) MonoAt(t time.Time) int64 { return c.mono0 + int64(t.Sub(c.t0)) }

// Epoch is the clock's value minus CLOCK_MONOTONIC, in ns.
func (c *Clock) Epoch() int64 { return c.epoch }

// FromKernel converts a kernel receive timestamp (CLOCK_REALTIME, ns) taken
// shortly before now: the packet's age by the wall clock is subtracted from
// the clock's now. ok is false when the age is negative or above a second,
// which means the wall clock stepped between arrival and reading (or the
// reading is unusable); the caller then uses its user-space reading.
func (c *Clock) FromKernel(kernelNs int64, now time.Time) (ns int64, ok bool) {
	age := now.UnixNano() - kernelNs
	if age < 0 || age > int64(time.Second) {
		return c.At(now), false
	}
	return c.At(now) - age, true
}

// StepDetector notices steps of the wall clock against the monotonic clock
// (settimeofday, a large NTP correction): sonde's own timestamps do not
// step, but a step tells the user that kernel timestamps taken at that
// moment, and a peer's wall-clock timestamps, may be off.
type StepDetector struct {
	ref, last time.Time
	lastSkew  int64
	Steps     int
}

// Check compares now's wall and monotonic readings with the previous
// check's. Slewing (≤ 500 ppm) is not a step; a jump above 1 ms beyond it is.
func (d *StepDetector) Check(now time.Time) bool {
	if d.ref.IsZero() {
		d.ref, d.last = now, now
		return false
	}
	skew := (now.UnixNano() - d.ref.UnixNano()) - int64(now.Sub(d.ref))
	elapsed := now.Sub(d.last)
	jump := skew - d.lastSkew
	d.last, d.lastSkew = now, skew
	if jump < 0 {
		jump = -jump
	}
	if jump > int64(time.Millisecond)+int64(elapsed)/2000 {
		d.Steps++
		return true
	}
	return false
}

// BootID identifies the running kernel: two endpoints with the same boot ID
// share CLOCK_MONOTONIC (absent time namespaces, which sonde does not use).
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// String formats a timestamp as UTC with nanoseconds.
func (t Timestamp) String() string {
	return fmt.Sprint(time.Unix(0, t.Ns()).UTC().Format(time.RFC3339Nano))
}
