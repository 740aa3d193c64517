package spinbit

import "slices"

// Loss bits (RFC 9506 §3 and §4, in QUIC as draft-ferrieux-hamchaoui-quic-
// lossbits): the short header's reserved bits, once the endpoints have
// negotiated them, carry the square bit Q (0x10) and the loss event bit L
// (0x08) instead of header-protected noise.
//
//   - Q: the sender flips Q every QPeriod packets it sends. An observer
//     counting the packets of each complete block sees QPeriod minus the
//     packets lost between the sender and itself (upstream loss).
//   - L: the sender sets L on one outgoing packet for every packet it has
//     declared lost, so L marks count the losses of the whole path in that
//     direction (end-to-end), one RTT or so late.
//
// Flows that did not negotiate the bits have header-protected reserved
// bits: Q then flips every other packet at random. The observer reports
// loss only for flows whose Q blocks look like the square wave.

// QPeriod is the square bit's half period in packets (RFC 9506 §4.1.1, N).
const QPeriod = 64

// Bits of a short header's first byte.
const (
	QBit = 0x10
	LBit = 0x08
)

// qReorder: a packet with the previous block's value within this many
// packets of the block's start was reordered, not a new block.
const qReorder = 4

type lossDir struct {
	have      bool
	q         bool
	cur, prev int // packets in the current and previous blocks
	prevOpen  bool
	blocks    []int // completed blocks' sizes (the first block excluded)
	packets   int
	lMarks    int
	started   bool // a block boundary has been seen
}

// LossObserver counts Q blocks and L marks for one QUIC connection.
type LossObserver struct {
	dir [2]lossDir
}

// Packet feeds the first byte of one short-header packet in dir.
func (o *LossObserver) Packet(dir uint8, first byte) {
	d := &o.dir[dir&1]
	d.packets++
	q := first&QBit != 0
	if first&LBit != 0 {
		d.lMarks++
	}
	if !d.have {
		d.have, d.q, d.cur = true, q, 1
		return
	}
	switch {
	case q == d.q:
		d.cur++
		if d.prevOpen && d.cur >= qReorder {
			d.closePrev()
		}
	case d.prevOpen && d.cur < qReorder:
		// The previous block's value is back right after the flip: a
		// late packet of that block.
		d.prev++
	default:
		if d.prevOpen {
			d.closePrev()
		}
		d.prev, d.cur, d.q, d.prevOpen = d.cur, 1, q, true
	}
}

// closePrev completes the previous block. The first block is partial (the
// capture may start inside it) and is not counted.
func (d *lossDir) closePrev() {
	d.prevOpen = false
	if d.started {
		d.blocks = append(d.blocks, d.prev)
	}
	d.started = true
}

// LossBits is the loss-bit report of one direction.
type LossBits struct {
	// Present: the Q bit follows the square wave in this direction.
	Present bool
	// Blocks is the number of complete Q blocks, Expected their packets
	// at the sender (Blocks × QPeriod), Seen those the observer counted.
	Blocks, Expected, Seen int
	// Upstream is Expected − Seen: packets lost between the sender and
	// the observer (negative with duplicated packets).
	Upstream int
	// LMarks counts packets with L set: losses over the whole path in
	// this direction, as detected by the sender.
	LMarks int
	// Packets is the short-header packets seen.
	Packets int
}

// Result reports dir. Q is taken as present when at least 3 complete
// blocks were seen and their median size is within a quarter of QPeriod:
// random header-protected bits give blocks of about 2 packets.
func (o *LossObserver) Result(dir uint8) LossBits {
	d := &o.dir[dir&1]
	r := LossBits{Packets: d.packets}
	if len(d.blocks) < 3 {
		return r
	}
	s := slices.Clone(d.blocks)
	slices.Sort(s)
	med := s[len(s)/2]
	if med < QPeriod*3/4 || med > QPeriod*5/4 {
		return r
	}
	r.Present = true
	r.Blocks = len(d.blocks)
	r.Expected = r.Blocks * QPeriod
	for _, b := range d.blocks {
		// A block of n periods' packets is n blocks of the same value
		// with the n−1 blocks of the other value between them lost
		// whole: it spans 2n−1 periods.
		if b > QPeriod*3/2 {
			n := (b + QPeriod/2) / QPeriod
			r.Expected += (2*n - 2) * QPeriod
		}
		r.Seen += b
	}
	r.Upstream = r.Expected - r.Seen
	r.LMarks = d.lMarks
	return r
}
