package ifstat

import "slices"

// Staleness: some drivers refresh their counters only every 1–2 s
// (docs/monitor.md). Read every 100 ms, such a counter holds its value for
// several reads and then jumps by a second's worth of traffic. Real traffic
// also pauses, so a pause alone proves nothing; what marks a stale driver is
// a run of jumps, each after at least two equal reads, each carrying at
// least flowBytesPerRead for every read it spans (traffic that a fresh
// counter would have shown at every read), at a steady period. A counter
// that changes at consecutive reads is fresh: the monitor's own probes make
// a fresh driver show it within a second.

const (
	flowBytesPerRead = 1500 // one full-size packet per read: "traffic flows"
	staleRuns        = 4    // jumps in a row at a steady period to call it stale
	freshRuns        = 3    // changes at consecutive reads to call it fresh
)

// staleness finds the effective resolution of a pair of counters.
type staleness struct {
	intervalNs int64
	lastNs     int64 // time of the last change
	reads      int   // reads since the last change
	gaps       [staleRuns]int64
	ngaps      int
	fresh      int
	resNs      int64 // effective resolution; intervalNs while fresh
}

func newStaleness(intervalNs int64) staleness {
	return staleness{intervalNs: intervalNs, resNs: intervalNs}
}

// observe takes one reading: whether either counter changed and by how
// many bytes in all. It returns true when the resolution changed.
func (s *staleness) observe(nowNs int64, changed bool, bytes uint64) bool {
	if s.lastNs == 0 {
		s.lastNs = nowNs
		return false
	}
	s.reads++
	if !changed {
		return false
	}
	reads, gap := s.reads, nowNs-s.lastNs
	s.reads, s.lastNs = 0, nowNs
	switch {
	case reads == 1:
		s.ngaps = 0
		if s.fresh++; s.fresh >= freshRuns && s.resNs != s.intervalNs {
			s.resNs = s.intervalNs
			return true
		}
	case reads >= 3 && bytes >= uint64(reads)*flowBytesPerRead:
		s.fresh = 0
		copy(s.gaps[:], s.gaps[1:])
		s.gaps[staleRuns-1] = gap
		if s.ngaps < staleRuns {
			s.ngaps++
		}
		if s.ngaps == staleRuns {
			return s.judge()
		}
	default:
		// A pause ended by a little traffic: says nothing either way.
		s.fresh = 0
	}
	return false
}

// judge sets the resolution from a full run of gaps when they are steady
// (each within one read interval of their median).
func (s *staleness) judge() bool {
	var g [staleRuns]int64
	copy(g[:], s.gaps[:])
	slices.Sort(g[:])
	med := g[staleRuns/2]
	if g[0] < med-s.intervalNs || g[staleRuns-1] > med+s.intervalNs {
		return false
	}
	// Round to whole read intervals: the driver's period is seen through them.
	res := (med + s.intervalNs/2) / s.intervalNs * s.intervalNs
	if d := res - s.resNs; d > s.intervalNs || d < -s.intervalNs {
		s.resNs = res
		return true
	}
	return false
}
