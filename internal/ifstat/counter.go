// Package ifstat reads an interface's byte counters every 100 ms, makes
// them 64-bit and monotonic (32-bit wraps and resets told apart), detects
// drivers that refresh them only every second or two, learns or takes the
// link's capacity, and labels any instant with the link's load state
// (model.LoadState) for `sonde monitor` (docs/monitor.md, "Interface
// counters and load states").
//
// The core (Tracker, Run) is portable and fed raw readings; the Linux sysfs
// reader (Sysfs) lives in sysfs_linux.go.
package ifstat

import "time"

// change is what a raw reading did to a counter besides growing.
type change uint8

const (
	changeNone  change = iota
	changeWrap         // a 32-bit counter wrapped: counted across the wrap
	changeReset        // the counter went down and is no wrap: driver reload, interface re-created
	changeJump         // it grew faster than the link can carry: not counted
)

// maxRefreshGap caps the time a counter may have held its value before a
// change is judged against the link's rate: stale drivers refresh every
// 1–2 s, so a longer gap only widens the ambiguity between a wrap and a
// reset without describing any real driver.
const maxRefreshGap = 5 * time.Second

// plausibleBytes is the most a counter can grow in elapsedNs at maxBps,
// with a margin for a late read and 64 KiB for a burst in flight.
func plausibleBytes(maxBps float64, elapsedNs int64) uint64 {
	if elapsedNs < 0 {
		elapsedNs = 0
	}
	if elapsedNs > int64(maxRefreshGap) {
		elapsedNs = int64(maxRefreshGap)
	}
	return uint64(maxBps/8*float64(elapsedNs)/1e9*1.25) + 64<<10
}

// counter is one byte counter made 64-bit and monotonic.
type counter struct {
	init      bool
	raw       uint64 // last raw reading
	total     uint64 // monotonic count
	changedNs int64  // when raw last changed
}

// update folds the raw reading taken at nowNs into the counter and returns
// the bytes it adds. maxBps (bits/s) is the fastest the interface can
// count. A counter that goes down is a 32-bit wrap when its old value fits
// in 32 bits and the bytes across the wrap are within what the link could
// carry since the last change; otherwise it is a reset, and the new value
// (bytes since the reset) counts if plausible. A rise beyond the link's
// rate is a jump and counts nothing: no reading ever yields a huge rate.
func (c *counter) update(raw uint64, nowNs int64, maxBps float64) (uint64, change) {
	if !c.init {
		*c = counter{init: true, raw: raw, total: raw, changedNs: nowNs}
		return 0, changeNone
	}
	if raw == c.raw {
		return 0, changeNone
	}
	limit := plausibleBytes(maxBps, nowNs-c.changedNs)
	var d uint64
	ch := changeNone
	switch {
	case raw > c.raw:
		d = raw - c.raw
		if d > limit {
			d, ch = 0, changeJump
		}
	case c.raw < 1<<32 && raw+(1<<32-c.raw) <= limit:
		d, ch = raw+(1<<32-c.raw), changeWrap
	default:
		ch = changeReset
		if raw <= limit {
			d = raw
		}
	}
	c.raw, c.changedNs = raw, nowNs
	c.total += d
	return d, ch
}
