// Package capture reads packets live from a network interface with an
// AF_PACKET socket, without libpcap: cooked mode (each packet starts at its
// IP header), the kernel's receive timestamp of each packet, an optional
// capfilter program run in the kernel, and the kernel's count of packets
// it dropped because the reader was too slow.
//
// The capture itself is Linux-only (capture_linux.go); elsewhere Open
// says it is not supported on this OS.
package capture

import (
	"fmt"
	"runtime"
)

// Packet is one captured IP packet. Data is valid until the next call to
// Next.
type Packet struct {
	TimeNs   int64 // kernel receive time, Unix ns
	Data     []byte
	Length   int  // length before any truncation to the buffer
	Outgoing bool // sent by this host
}

// Stats are the kernel's counts for the socket (PACKET_STATISTICS), summed
// over the capture.
type Stats struct {
	// Received counts the packets that passed the filter (on loopback each
	// packet twice: leaving and arriving).
	Received uint64
	// Dropped counts those dropped because the socket buffer was full.
	Dropped uint64
}

// ErrOS is what Open returns on a system without AF_PACKET.
var ErrOS = fmt.Errorf("live capture is not supported on %s (AF_PACKET is Linux's)", runtime.GOOS)
