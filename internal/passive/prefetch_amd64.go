package passive

import "unsafe"

// prefetch asks the CPU to bring the cache lines of [p, p+n) (at least
// the first) towards the core without waiting for them: unlike a load, it
// retires at once and never faults, so the misses of several flows are
// in flight while the packets before them are analysed.
//
//go:noescape
func prefetch(p unsafe.Pointer, n uintptr)
