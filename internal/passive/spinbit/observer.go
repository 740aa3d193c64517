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
	minPackets     = 32 // short-header packets before a flow is classified
)

type edge struct {
	t, gap int64
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
	fresh      bool // the next interval spans a CID change
}

// filter is the plausibility filter of one kind of sample: a running
// minimum and the median of recent accepted samples.
type filter struct {
	min     int64
	hist    [historyLen]int64
	nhist   int
	outHigh int
	outLow  int
}

// Observer estimates spin-bit RTT for one QUIC connection.
type Observer struct {
	dir [2]direction
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
		d.tentEdge = edge{t: t, gap: t - d.lastPacket, id: id, ok: true}
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
	var tmp [historyLen]int64
	copy(tmp[:], o.hist[:n])
	slices.Sort(tmp[:n])
	return tmp[n/2]
}

func (o *filter) accept(rtt int64) {
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
	between := false
	cands := [3]edge{other.last, other.prev}
	if other.tent {
		cands[2] = other.tentEdge
	}
	for _, c := range cands {
		if c.ok && c.t <= e.t && (!d.last.ok || c.t >= d.last.t) && (!between || c.t > refl.t) {
			refl, between = c, true
		}
	}
	med := o.median()
	appLimited := func(x edge) bool { return med > 0 && x.gap > med/idleFraction }
	if between {
		c := Sample{T: e.t, RTT: e.t - refl.t, Dir: dir ^ 1, Kind: Component, IDs: [3]uint64{refl.id, e.id}, N: 2}
		switch {
		case d.edges <= 2 || other.edges <= 1:
			c.Flag = FirstEdge
		case appLimited(e):
			c.Flag = AppLimited
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
		case appLimited(e) || (between && appLimited(refl)):
			s.Flag = AppLimited
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

// State classifies the flow from what was seen so far.
func (o *Observer) State() State {
	pk := o.dir[0].packets + o.dir[1].packets
	ed := o.dir[0].edges + o.dir[1].edges
	gl := o.dir[0].glitches + o.dir[1].glitches
	switch {
	case pk < minPackets:
		return Unknown
	case ed == 0 && gl == 0:
		return Constant
	case 3*(ed+gl) > pk:
		// A spinning flow flips once per RTT per direction; flips at a
		// sizeable fraction of the packet rate are random values.
		return Random
	}
	return Spinning
}

// Counts returns short-header packets, committed edges and reordering
// glitches seen in dir.
func (o *Observer) Counts(dir uint8) (packets, edges, glitches int) {
	d := &o.dir[dir&1]
	return d.packets, d.edges, d.glitches
}
