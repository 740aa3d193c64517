package passive

import (
	"unsafe"

	"github.com/sonde-project/sonde/internal/prefetch"
)

// warm reads one word of every cache line of a flow's state at once, when
// a train of its packets starts, and then the entries its rings and RTT
// summaries will be read at. Between one train of a flow and the next the
// analyser sees thousands of other flows, so the state is out of the
// cache; the packet's path then finds its lines one at a time (a field, a
// branch on it, the next field), each a full memory latency, and on a
// busy machine, where other processes share the cache, much of the CPU
// time went to those waits. Independent loads issued together overlap.
// The sum means nothing (Analyzer.warm keeps it, so that the reads stay).
// The packets of a file read to its end are warmed ahead instead
// (readahead.go); warm serves the others (several files merged, live
// capture, the workers' shards).
func warm(f *flow) uint64 {
	var p unsafe.Pointer
	var n uintptr
	switch {
	case f.tcp != nil:
		p, n = unsafe.Pointer(f.tcp), unsafe.Sizeof(tcpConn{})
	case f.quic != nil:
		p, n = unsafe.Pointer(f.quic), unsafe.Sizeof(quicConn{})
	default:
		return 0
	}
	var s uint64
	for off := uintptr(0); off+8 <= n; off += 64 {
		s += *(*uint64)(unsafe.Add(p, off))
	}
	if c := f.tcp; c != nil {
		s += c.ts.Touch() + c.sa.Touch()
		for i := range c.dir {
			if d := &c.dir[i]; len(d.series) > 0 {
				s += d.series[len(d.series)-1]
			}
		}
		for i := range c.rtt {
			r := &c.rtt[i]
			if n := len(r.exact); n > 0 {
				s += uint64(r.exact[n-1])
			}
			if n := len(r.pend); n > 0 {
				s += uint64(r.pend[n-1])
			}
			if n := len(r.counts); n > 0 && len(r.pend) >= foldBatch-8 {
				// A fold is near (a train brings up to 8 samples):
				// every line of its counts and bitmaps, which it
				// would otherwise miss one by one.
				for i := 0; i < n; i += 16 {
					s += uint64(r.counts[i])
				}
				for i := 0; i < len(r.octs); i += 4 {
					s += r.octs[i].has
				}
			}
		}
	}
	return s
}

// warmAhead is warm's second half as prefetches, for a flow whose packet
// is analysed a few packets later (readahead.go, which prefetched the
// state itself a few packets before: warmAhead reads its pointers): the
// ring entries, goodput bins and summary buffers the state points to.
func warmAhead(f *flow) {
	switch {
	case f.tcp != nil:
		c := f.tcp
		c.ts.Prefetch()
		c.sa.Prefetch()
		for i := range c.dir {
			// The goodput bin a data segment adds to (addSeries).
			if d := &c.dir[i]; len(d.series) > 0 {
				prefetch.Lines(unsafe.Pointer(&d.series[len(d.series)-1]), 1)
			}
		}
		for i := range c.rtt {
			c.rtt[i].prefetch()
		}
	case f.quic != nil:
		c := f.quic
		if cap(c.spin.Samples) > 0 {
			prefetch.Lines(unsafe.Pointer(&c.spin.Samples[:1][0]), 1)
		}
		for i := range c.stats {
			c.stats[i].prefetch()
		}
	}
}

// prefetch starts the loads of the buffer a sample is added to and, when
// a fold is near, of the histogram it is folded into.
func (r *rttStats) prefetch() {
	if n := len(r.exact); n > 0 {
		prefetch.Lines(unsafe.Pointer(&r.exact[n-1]), 1)
	}
	if n := len(r.pend); n > 0 {
		prefetch.Lines(unsafe.Pointer(&r.pend[n-1]), 1)
	}
	if n := len(r.counts); n > 0 && len(r.pend) >= foldBatch-8 {
		prefetch.Lines(unsafe.Pointer(&r.counts[0]), uintptr(n)*4)
		prefetch.Lines(unsafe.Pointer(&r.octs[0]), uintptr(len(r.octs))*unsafe.Sizeof(octIndex{}))
	}
}
