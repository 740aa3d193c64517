package prefetch

import "unsafe"

// Lines asks the CPU to bring the cache lines of [p, p+n) (at least the
// first) towards the core without waiting for them: unlike a load, the
// instruction retires at once and never faults, so the misses of several
// structures are in flight while other work runs.
//
//go:noescape
func Lines(p unsafe.Pointer, n uintptr)
