package emulator

import (
	"encoding/binary"
	"time"

	"github.com/sonde-project/sonde/internal/checksum"
)

// Fate is what became of a packet.
type Fate uint8

// Packet fates, as written in ground-truth records.
const (
	Queued       Fate = iota // still inside the link (never written)
	Delivered                // left the link
	DropLoss                 // random loss (Bernoulli, Gilbert–Elliott, BER)
	DropQueue                // queue limit reached (tail drop or FQ overflow)
	DropAQM                  // dropped by CoDel, PIE or FQ-CoDel
	DropMTU                  // larger than the link MTU
	DropShutdown             // still queued when the emulator stopped
	DropWrite                // the egress device refused it
)

var fateNames = [...]string{"queued", "delivered", "loss", "queue", "aqm", "mtu", "shutdown", "write"}

func (f Fate) String() string {
	if int(f) < len(fateNames) {
		return fateNames[f]
	}
	return "unknown"
}

// Flags describe a packet in a ground-truth record.
type Flags uint8

// Packet flags.
const (
	FlagECT       Flags = 1 << iota // ECN-capable (ECT(0) or ECT(1)) on arrival
	FlagCEIn                        // already CE on arrival
	FlagMarked                      // marked CE by this link
	FlagDuplicate                   // a copy made by the duplication model
	FlagTCP                         // TCP seq is valid
	FlagTSval                       // TCP TSval is valid
	FlagIPv6                        // IPv6 packet
)

// Packet is one IP packet inside the model, with the times the ground truth
// records. Times are durations since the driver's start (its monotonic
// clock); -1 means "did not happen".
type Packet struct {
	Data []byte

	Seq      uint64        // arrival number in this direction, from 1
	Arrival  time.Duration // read from the ingress device = enqueue time
	Dequeue  time.Duration // left the queue, serialisation starts
	Due      time.Duration // scheduled delivery time
	Sent     time.Duration // actually written by the driver
	QPackets uint32        // backlog seen on arrival, packets
	QBytes   uint32        // backlog seen on arrival, bytes
	// MediumWait is how long the packet, at the head of its queue, waited
	// for a half-duplex medium the other direction held.
	MediumWait time.Duration
	Fate       Fate
	Flags      Flags

	flow uint32 // FQ bucket
	// Ctx is free for the driver (e.g. a buffer pool handle).
	Ctx any
}

// reset prepares a packet for a new arrival.
func (p *Packet) reset() {
	p.Seq, p.Dequeue, p.Due, p.Sent, p.MediumWait = 0, -1, -1, -1, 0
	p.QPackets, p.QBytes, p.Fate, p.Flags, p.flow = 0, 0, Queued, 0, 0
}

// ipVersion returns 4, 6 or 0.
func ipVersion(b []byte) int {
	if len(b) < 1 {
		return 0
	}
	switch v := b[0] >> 4; {
	case v == 4 && len(b) >= 20:
		return 4
	case v == 6 && len(b) >= 40:
		return 6
	}
	return 0
}

// ecnBits returns the packet's two ECN bits (0 when not IP).
func ecnBits(b []byte) byte {
	switch ipVersion(b) {
	case 4:
		return b[1] & 3
	case 6:
		return (b[1] >> 4) & 3
	}
	return 0
}

// MarkCE sets the ECN field to CE if the packet is ECN-capable and reports
// whether it did; the IPv4 header checksum is updated incrementally (RFC
// 1624). A packet already CE counts as marked.
func MarkCE(b []byte) bool {
	e := ecnBits(b)
	if e == 0 {
		return false
	}
	if e == 3 {
		return true
	}
	switch ipVersion(b) {
	case 4:
		old := binary.BigEndian.Uint16(b[0:2])
		b[1] |= 3
		checksum.Update(b[10:12], old, binary.BigEndian.Uint16(b[0:2]))
	case 6:
		b[1] |= 3 << 4
	}
	return true
}

// RemarkDSCP rewrites the DSCP of an IPv4 or IPv6 packet from `from` (-1:
// any) to `to`, keeping the ECN bits, and reports whether it did.
func RemarkDSCP(b []byte, from, to int) bool {
	switch ipVersion(b) {
	case 4:
		if len(b) < 20 || from >= 0 && int(b[1]>>2) != from || int(b[1]>>2) == to {
			return false
		}
		old := binary.BigEndian.Uint16(b[0:2])
		b[1] = byte(to)<<2 | b[1]&3
		checksum.Update(b[10:12], old, binary.BigEndian.Uint16(b[0:2]))
		return true
	case 6:
		if len(b) < 40 {
			return false
		}
		tc := b[0]<<4 | b[1]>>4
		if from >= 0 && int(tc>>2) != from || int(tc>>2) == to {
			return false
		}
		tc = byte(to)<<2 | tc&3
		b[0] = b[0]&0xf0 | tc>>4
		b[1] = b[1]&0x0f | tc<<4
		return true
	}
	return false
}

// l4 returns the transport protocol, its header offset and whether the packet
// is a first (or only) fragment. IPv6 extension headers are not walked.
func l4(b []byte) (proto byte, off int, ok bool) {
	switch ipVersion(b) {
	case 4:
		ihl := int(b[0]&15) * 4
		fragOff := binary.BigEndian.Uint16(b[6:8]) & 0x1fff
		if ihl < 20 || ihl > len(b) || fragOff != 0 {
			return b[9], 0, false
		}
		return b[9], ihl, true
	case 6:
		return b[6], 40, true
	}
	return 0, 0, false
}

// Identity describes a packet well enough to find it again in a capture.
type Identity struct {
	Hash   uint64
	IPID   uint32 // IPv4 identification, or IPv6 flow label
	TCPSeq uint32
	TSval  uint32
	Proto  uint8
	Flags  Flags // FlagTCP, FlagTSval, FlagIPv6
}

// fnv-1a 64
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnv(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// identityL4Bytes is how many bytes of the transport header and payload
// enter the identity hash.
const identityL4Bytes = 32

// PacketIdentity computes the identity of an IP packet: an FNV-1a 64 hash
// over the fields no router or this emulator changes (addresses, protocol,
// length, IPv4 ID or IPv6 flow label, and the first 32 bytes from the
// transport header on), excluding TTL/hop limit, DSCP/ECN and the IPv4
// checksum; plus IP ID, TCP seq and TSval for direct matching. The analyzer
// must compute the hash exactly like this (docs/emulator.md).
func PacketIdentity(b []byte) Identity {
	var id Identity
	h := uint64(fnvOffset)
	switch ipVersion(b) {
	case 4:
		id.IPID = uint32(binary.BigEndian.Uint16(b[4:6]))
		id.Proto = b[9]
		h = fnv(h, []byte{4, b[9]})
		h = fnv(h, b[2:4])   // total length
		h = fnv(h, b[4:8])   // ID, flags, fragment offset
		h = fnv(h, b[12:20]) // addresses
	case 6:
		id.Flags |= FlagIPv6
		id.IPID = binary.BigEndian.Uint32(b[0:4]) & 0xfffff
		id.Proto = b[6]
		var fl [3]byte
		fl[0], fl[1], fl[2] = b[1]&0x0f, b[2], b[3]
		h = fnv(h, []byte{6, b[6]})
		h = fnv(h, fl[:])
		h = fnv(h, b[4:6])  // payload length
		h = fnv(h, b[8:40]) // addresses
	default:
		id.Hash = fnv(h, b)
		return id
	}
	proto, off, ok := l4(b)
	if off > 0 {
		end := min(len(b), off+identityL4Bytes)
		h = fnv(h, b[off:end])
	}
	id.Hash = h
	if ok && proto == 6 && len(b) >= off+20 {
		id.Flags |= FlagTCP
		id.TCPSeq = binary.BigEndian.Uint32(b[off+4 : off+8])
		if ts, found := tcpTSval(b[off:]); found {
			id.Flags |= FlagTSval
			id.TSval = ts
		}
	}
	return id
}

// tcpTSval finds the TSval of a TCP timestamp option.
func tcpTSval(t []byte) (uint32, bool) {
	doff := int(t[12]>>4) * 4
	if doff < 20 || doff > len(t) {
		return 0, false
	}
	opts := t[20:doff]
	for i := 0; i < len(opts); {
		switch kind := opts[i]; kind {
		case 0:
			return 0, false
		case 1:
			i++
			continue
		case 8:
			if i+10 <= len(opts) && opts[i+1] == 10 {
				return binary.BigEndian.Uint32(opts[i+2 : i+6]), true
			}
			return 0, false
		}
		if i+1 >= len(opts) || opts[i+1] < 2 {
			return 0, false
		}
		i += int(opts[i+1])
	}
	return 0, false
}

// seededHash starts an FNV-1a hash perturbed by seed.
func seededHash(seed uint64) uint64 {
	var s [8]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return fnv(fnvOffset, s[:])
}

// flowHash hashes the 5-tuple (addresses, protocol, ports) from a seeded
// start h, for FQ-CoDel's flow queues. Non-IP packets and fragments fall
// back to addresses only.
func flowHash(b []byte, h uint64) uint64 {
	switch ipVersion(b) {
	case 4:
		h = fnv(h, b[12:20])
	case 6:
		h = fnv(h, b[8:40])
	default:
		return h
	}
	proto, off, ok := l4(b)
	h = fnv(h, []byte{proto})
	if ok && (proto == 6 || proto == 17 || proto == 132 || proto == 136) && len(b) >= off+4 {
		h = fnv(h, b[off:off+4])
	}
	return h
}
