// Package capture reads packets live from a network interface with
// AF_PACKET sockets, without libpcap: cooked mode (each packet starts at
// its IP header), a TPACKET_V3 ring per socket (blocks of packets the
// kernel fills and hands over in memory shared with sonde, no copy and no
// system call per packet), the kernel's receive timestamp of each packet,
// an optional capfilter program run in the kernel, PACKET_FANOUT to split
// the packets across several sockets by a symmetric flow hash (both
// directions of a connection to the same socket, so each socket can feed
// its own analyser), and the kernel's counts of the packets it dropped
// because the reader was too slow.
//
// The capture itself is Linux-only (capture_linux.go); elsewhere Open
// says it is not supported on this OS. The ring's layout is read by
// ring.go, portable and fuzzed.
package capture

import (
	"fmt"
	"runtime"

	"github.com/sonde-project/sonde/internal/capfilter"
)

// Packet is one captured IP packet. Data is valid until the next call to
// Next on the same Source.
type Packet struct {
	TimeNs   int64 // kernel receive time, Unix ns
	Data     []byte
	Length   int  // length before any truncation to the ring's block
	Outgoing bool // sent by this host
}

// Stats are the kernel's counts (PACKET_STATISTICS), summed over the
// capture and, for a Group, over its sockets, with the reader's own.
type Stats struct {
	// Received counts the packets that passed the filter, the dropped
	// ones included (on loopback each packet twice: leaving and
	// arriving).
	Received uint64
	// Dropped counts those the kernel dropped because the ring was full:
	// the reader fell behind.
	Dropped uint64
	// Freezes counts the times the ring filled up, every block waiting
	// for the reader (tp_freeze_q_cnt): packets that arrive then are
	// dropped.
	Freezes uint64
	// Read counts the packets taken from the ring (on loopback the
	// outgoing copies, which Next skips, included): Received - Dropped -
	// Read were still in the ring when the reading stopped.
	Read uint64
	// BadBlocks counts the ring blocks that were malformed: their
	// packets from the damage on were skipped (never expected of a
	// kernel; counted rather than trusted).
	BadBlocks uint64
}

func (s *Stats) add(o Stats) {
	s.Received += o.Received
	s.Dropped += o.Dropped
	s.Freezes += o.Freezes
	s.Read += o.Read
	s.BadBlocks += o.BadBlocks
}

// Options configure Open.
type Options struct {
	// Filter selects the packets in the kernel (nil: every packet).
	Filter *capfilter.Filter
	// Workers is the number of sockets, 1 to MaxWorkers (0: 1). With
	// more than one they form one PACKET_FANOUT group that splits the
	// packets by a hash of their flow, the same for both directions.
	Workers int
	// RingBytes is each socket's ring, MinRingBytes to MaxRingBytes (0:
	// DefaultRingBytes); rounded down to whole blocks.
	RingBytes int
}

// Bounds of Options.
const (
	MaxWorkers       = 64
	MinRingBytes     = 128 << 10
	MaxRingBytes     = 1 << 30
	DefaultRingBytes = 32 << 20
	// maxBlockBytes is the ring's block unless the ring is small: a
	// packet longer than a block is truncated to it (a GRO packet is at
	// most 64 KiB unless gro_max_size was raised). The kernel hands a
	// block over when full or blockTimeout old, so a ring holds at
	// least blocks × blockTimeoutMs of traffic: at low rates, while sonde
	// waits for a core, the number of blocks is the buffer, not the
	// bytes (32 MiB of 1 MiB blocks held 0.32 s).
	maxBlockBytes = 128 << 10
	// blocksAtLeast is the fewest blocks of a ring: the kernel fills one
	// while sonde reads others.
	blocksAtLeast = 8
)

// ringGeometry returns the block size and count of a ring of about
// bytes: blocks of a power of two of at least a page, at most
// maxBlockBytes, and at least blocksAtLeast of them.
func ringGeometry(bytes, page int) (blockSize, blocks int) {
	blockSize = maxBlockBytes
	for blockSize > page && blockSize*blocksAtLeast > bytes {
		blockSize /= 2
	}
	return blockSize, max(bytes/blockSize, 1)
}

func (o *Options) check() error {
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.RingBytes == 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.Workers < 1 || o.Workers > MaxWorkers {
		return fmt.Errorf("capture: %d workers: want 1 to %d", o.Workers, MaxWorkers)
	}
	if o.RingBytes < MinRingBytes || o.RingBytes > MaxRingBytes {
		return fmt.Errorf("capture: ring of %d bytes: want %d KiB to %d MiB", o.RingBytes, MinRingBytes>>10, MaxRingBytes>>20)
	}
	return nil
}

// ErrOS is what Open returns on a system without AF_PACKET.
var ErrOS = fmt.Errorf("live capture is not supported on %s (AF_PACKET is Linux's)", runtime.GOOS)
