package spinbit

import "slices"

// Kind of a spin sample.
type Kind uint8

// Sample kinds: a full RTT is the time between consecutive edges in one
// direction; a component is the time from an edge in one direction to the
// next edge in the other (observer → endpoint → observer).
const (
	Full Kind = iota
	Component
)

// Flag says why a sample is not valid (0: valid).
type Flag uint8

// Reasons a sample is not used.
const (
	Valid       Flag = iota
	FirstEdge        // first interval after the handshake
	TooLow           // far below the running minimum, not persistent
	TooHigh          // far above the running median, not persistent
	AppLimited       // an edge waited for a sender that had nothing to send
	CIDChange        // spans a connection-ID change (possible migration)
	NotSpinning      // the flow does not spin (constant or random values)
)

var flagNames = [...]string{"valid", "handshake", "too-low", "too-high", "app-limited", "cid-change", "not-spinning"}

func (f Flag) String() string {
	if int(f) < len(flagNames) {
		return flagNames[f]
	}
	return "?"
}

// Sample is one spin-bit RTT estimate.
type Sample struct {
	T    int64 // observer time of the closing edge, ns
	RTT  int64 // ns
	Dir  uint8 // direction of the edges (Full) or of the opening edge (Component)
	Kind Kind
	Flag Flag
	// IDs are the caller's identities of the edge packets in order
	// (opening, [reflected,] closing); N says how many are set.
	IDs [3]uint64
	N   uint8
}

// State classifies a flow's spin behaviour.
type State uint8

// Spin states.
const (
	Unknown  State = iota // too few short-header packets to tell
	Spinning              // edges at RTT scale
	Constant              // never flips
	Random                // flips at packet rate (spin disabled randomly)
)

var stateNames = [...]string{"unknown", "spinning", "constant", "random"}

func (s State) String() string { return stateNames[s] }

// Tuning of the heuristics.
const (
	confirmPackets = 2  // packets with the new value that confirm an edge
	historyLen     = 16 // accepted samples the median is taken over
	persistCount   = 3  // consecutive outliers that are accepted as real
	lowFactor      = 2  // reject < min/lowFactor
	highFactor     = 3  // reject > median·highFactor
	idleFraction   = 4  // app-limited: gap before an edge > median/idleFraction
	idleGaps       = 4  // ... and > idleGaps × the direction's mean packet gap
	minPackets     = 32 // short-header packets before a flow is classified
	minDirPackets  = 16 // short-header packets before a direction is classified
	// A spinning flow's edges alternate between the directions (an edge
	// up, its reflection down, the next edge up): at least altFraction of
	// consecutive edge pairs (in time) must change direction once
	// minPairs pairs were seen. Independent random values interleave at
	// about one half, a one-sided random bit at zero.
	altFraction = 0.75
	minPairs    = 8
)

type edge struct {
	t, gap int64
	avgGap int64 // the direction's mean packet gap before the edge
	id     uint64
	ok     bool
}

type direction struct {
	have       bool
	cur        bool
	tent       bool // a candidate edge awaits confirmation
	tentVal    bool
	tentCount  int
	tentEdge   edge
	last       edge // last committed edge
	prev       edge // the one before
	edges      int
	packets    int
	glitches   int
	lastPacket int64
	avgGap     int64 // moving mean of the gap between packets (1/8 weight)
	fresh      bool  // the next interval spans a CID change
}

// filter is the plausibility filter of one kind of sample: a running
// minimum and the median of recent accepted samples.
type filter struct {
	min   int64
	hist  [historyLen]int64
	nhist int
	// sorted holds hist's values (the first min(nhist, historyLen))
	// in order, kept as samples come and go: every edge asks for the
	// median, and sorting the history each time was 6 % of the
	// analyser's time on a capture of many QUIC flows.
	sorted  [historyLen]int64
	outHigh int
	outLow  int
}

// Observer estimates spin-bit RTT for one QUIC connection.
type Observer struct {
	dir [2]direction
	// Alternation: intervals between consecutive edges of one direction,
	// and those that hold exactly one edge of the other direction.
	pairs, alt int
	filter
	// comp filters component samples per opening direction.
	comp [2]filter
	// Samples holds every sample, valid or not, in order.
	Samples []Sample
}

// Packet feeds one short-header packet travelling in dir (0 or 1).
func (o *Observer) Packet(dir uint8, t int64, spin bool, id uint64) {
	d := &o.dir[dir&1]
	d.packets++
	o.packet(dir&1, d, t, spin, id)
	if d.packets > 1 {
		g := t - d.lastPacket
		if d.packets == 2 {
			d.avgGap = g
		}
		d.avgGap += (g - d.avgGap) / 8
	}
	d.lastPacket = t
}

func (o *Observer) packet(dir uint8, d *direction, t int64, spin bool, id uint64) {
	if !d.have {
		d.have, d.cur = true, spin
		return
	}
	if d.tent {
		if spin == d.tentVal {
			d.tentCount++
			if d.tentCount >= confirmPackets {
				o.commit(dir, d)
			}
			return
		}
		// Reverted: reordering if it came back quickly, otherwise the
		// candidate was a real edge seen through a sparse packet stream.
		if t-d.tentEdge.t < o.reorderWindow() {
			d.glitches++
			d.tent = false
			return
		}
		o.commit(dir, d)
	}
	if spin != d.cur {
		d.tent, d.tentVal, d.tentCount = true, spin, 1
		d.tentEdge = edge{t: t, gap: t - d.lastPacket, avgGap: d.avgGap, id: id, ok: true}
	}
}

// reorderWindow is how soon a reverted flip counts as reordering.
func (o *Observer) reorderWindow() int64 {
	if o.min > 0 {
		return o.min / 8
	}
	return 2e6
}

// ResetDir forgets dir's last edge after a connection-ID change: the next
// interval may span a migration.
func (o *Observer) ResetDir(dir uint8) {
	d := &o.dir[dir&1]
	d.fresh = true
}

func (o *filter) median() int64 {
	n := min(o.nhist, historyLen)
	if n == 0 {
		return 0
	}
	return o.sorted[n/2]
}

func (o *filter) accept(rtt int64) {
	n := min(o.nhist, historyLen)
	if o.nhist >= historyLen {
		// The value rtt replaces leaves the sorted copy.
		old := o.hist[o.nhist%historyLen]
		i, _ := slices.BinarySearch(o.sorted[:n], old)
		copy(o.sorted[i:n-1], o.sorted[i+1:n])
		n--
	}
	i, _ := slices.BinarySearch(o.sorted[:n], rtt)
	copy(o.sorted[i+1:n+1], o.sorted[i:n])
	o.sorted[i] = rtt
	o.hist[o.nhist%historyLen] = rtt
	o.nhist++
	if o.min == 0 || rtt < o.min {
		o.min = rtt
	}
}

// judge applies the plausibility filter to a sample.
func (o *filter) judge(rtt int64) Flag {
	med := o.median()
	switch {
	case o.min > 0 && rtt < o.min/lowFactor:
		o.outLow++
		if o.outLow < persistCount {
			return TooLow
		}
		o.min = rtt
	case med > 0 && rtt > med*highFactor:
		o.outHigh++
		if o.outHigh < persistCount {
			return TooHigh
		}
		o.nhist = 0 // the path changed: restart the median
	}
	o.outLow, o.outHigh = 0, 0
	return Valid
}

func (o *Observer) commit(dir uint8, d *direction) {
	e := d.tentEdge
	d.tent = false
	d.cur = d.tentVal
	d.edges++
	other := &o.dir[dir^1]
	// The other direction's last edge between our previous edge and this
	// one is the reflection.
	// one is the reflection. Edges commit when confirmed, so the other
	// direction may already have committed the edge after it (look one
	// further back) or not yet confirmed it (take the candidate): a
	// sparse direction confirms later than a busy one.
	var refl edge
	between, inside := false, 0
	cands := [3]edge{other.last, other.prev}
	if other.tent {
		cands[2] = other.tentEdge
	}
	for _, c := range cands {
		if c.ok && c.t <= e.t && (!d.last.ok || c.t >= d.last.t) {
			inside++
			if !between || c.t > refl.t {
				refl, between = c, true
			}
		}
	}
	if d.last.ok {
		o.pairs++
		if inside == 1 {
			o.alt++
		}
	}
	med := o.median()
	// An edge is late (app-limited) when its packet followed a silence
	// both long against the RTT and unusual for its direction: a sparse
	// direction (an ACK every few ms) has gaps above RTT/4 all the time,
	// and the RTT-only test rejected nearly all its samples without
	// moving the median (docs/analyze.md, TestAppLimitedFilterValue).
	appLimited := func(x edge) bool {
		return x.ok && med > 0 && x.gap > med/idleFraction && x.gap > idleGaps*x.avgGap
	}
	if between {
		c := Sample{T: e.t, RTT: e.t - refl.t, Dir: dir ^ 1, Kind: Component, IDs: [3]uint64{refl.id, e.id}, N: 2}
		switch {
		case d.edges <= 2 || other.edges <= 1:
			c.Flag = FirstEdge
		case appLimited(e) || appLimited(refl):
			c.Flag = AppLimited // a late edge makes it long, a late reflection short
		default:
			f := &o.comp[dir^1]
			if c.Flag = f.judge(c.RTT); c.Flag == Valid {
				f.accept(c.RTT)
			}
		}
		o.Samples = append(o.Samples, c)
	}
	if d.last.ok {
		s := Sample{T: e.t, RTT: e.t - d.last.t, Dir: dir, Kind: Full, IDs: [3]uint64{d.last.id, e.id}, N: 2}
		if between {
			s.IDs = [3]uint64{d.last.id, refl.id, e.id}
			s.N = 3
		}
		switch {
		case d.edges <= 2:
			s.Flag = FirstEdge // the first edge's timing is the handshake's
		case d.fresh:
			s.Flag = CIDChange
		case appLimited(e) || (between && appLimited(refl)) || appLimited(d.last):
			s.Flag = AppLimited // a late closing edge makes it long, a late opening edge short
		default:
			if s.Flag = o.judge(s.RTT); s.Flag == Valid {
				o.accept(s.RTT)
			}
		}
		o.Samples = append(o.Samples, s)
	}
	d.fresh = false
	d.prev, d.last = d.last, e
}

// Finish classifies the flow and marks every sample of a flow that does not
// spin. It returns the state.
func (o *Observer) Finish() State {
	st := o.State()
	if st == Constant || st == Random {
		for i := range o.Samples {
			o.Samples[i].Flag = NotSpinning
		}
	}
	return st
}

// rateRandom reports whether d flips at a sizeable fraction of its packet
// rate: a spinning direction flips once per RTT.
func rateRandom(d *direction) bool { return 3*(d.edges+d.glitches) > d.packets }

// alternates reports whether the edges seen so far alternate between the
// directions as the spin protocol requires.
func (o *Observer) alternates() bool { return float64(o.alt) >= altFraction*float64(o.pairs) }

// DirState classifies one direction (0 or 1) on its own: Constant if it
// never flips, Random if it flips at packet rate or its edges do not
// alternate with the other direction's, Unknown with too few packets.
// Spinning needs the other direction too (State).
func (o *Observer) DirState(dir uint8) State {
	d := &o.dir[dir&1]
	switch {
	case d.packets < minDirPackets:
		return Unknown
	case d.edges == 0 && d.glitches == 0:
		return Constant
	case d.glitches > 2*d.edges:
		// Single packets off a steady value, many more than edges: a
		// bit randomised on some packets only. Reordering makes at most
		// a glitch or two per real edge.
		return Random
	case o.pairs >= minPairs && !o.alternates(), o.pairs < minPairs && rateRandom(d):
		// With enough edges their alternation decides: a sparse
		// direction (an ACK every other packet) can flip at a third of
		// its packets and still spin.
		return Random
	}
	return Spinning
}

// State classifies the flow from what was seen so far. Each direction is
// judged on its own (a stack that disables the spin may randomise it while
// its peer keeps it constant, RFC 9000 §17.4): the flow spins only if both
// directions flip, neither at packet rate, and their edges alternate. A
// flow with a Random direction is Random, else one with a Constant
// direction is Constant.
func (o *Observer) State() State {
	if o.dir[0].packets+o.dir[1].packets < minPackets {
		return Unknown
	}
	s0, s1 := o.DirState(0), o.DirState(1)
	switch {
	case s0 == Random || s1 == Random:
		return Random
	case s0 == Constant || s1 == Constant:
		return Constant
	case s0 == Unknown || s1 == Unknown:
		// One direction nearly silent: spinning only if the busy one
		// looks like it and the sparse one flipped at all.
		if s0 == Spinning && o.dir[1].edges > 0 || s1 == Spinning && o.dir[0].edges > 0 {
			return Spinning
		}
		return Unknown
	}
	return Spinning
}

// Counts returns short-header packets, committed edges and reordering
// glitches seen in dir.
func (o *Observer) Counts(dir uint8) (packets, edges, glitches int) {
	d := &o.dir[dir&1]
	return d.packets, d.edges, d.glitches
}
