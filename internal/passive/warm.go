package passive

import "unsafe"

// warm reads one word of every cache line of a flow's state at once, when
// a train of its packets starts, and then the entries its rings and RTT
// summaries will be read at. Between one train of a flow and the next the
// analyser sees thousands of other flows, so the state is out of the
// cache; the packet's path then finds its lines one at a time (a field, a
// branch on it, the next field), each a full memory latency, and on a
// busy machine, where other processes share the cache, much of the CPU
// time went to those waits. Independent loads issued together overlap.
// The sum means nothing (Analyzer.warm keeps it, so that the reads stay).
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
		for i := range c.rtt {
			r := &c.rtt[i]
			if n := len(r.exact); n > 0 {
				s += uint64(r.exact[n-1])
			}
			switch n := len(r.counts); {
			case n > 0 && len(r.exact) >= foldBatch-8:
				// A fold is near (a train brings up to 8 samples):
				// every line of its buckets and counts, which its
				// binary searches would otherwise miss one by one.
				for i := 0; i < n; i += 32 {
					s += uint64(r.buckets[i])
				}
				for i := 0; i < n; i += 16 {
					s += uint64(r.counts[i])
				}
			case n > 0:
				s += uint64(r.counts[n/2]) + uint64(r.buckets[n/2])
			}
		}
	}
	return s
}
