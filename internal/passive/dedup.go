package passive

import (
	"encoding/binary"

	"github.com/sonde-project/sonde/internal/pcap"
)

// dupFilter drops the second copy of a packet in a Linux cooked capture
// (`tcpdump -i any`, SLL or SLL2): a packet forwarded by the capturing
// host is captured on its way in and again on its way out, and counting
// it twice made every data segment a retransmission. A copy is the same
// IP packet (TTL and IPv4 header checksum aside, which forwarding
// changes) seen within dupWindow with another SLL packet type or
// interface index: a genuine resend leaves from the same interface in
// the same direction, and differs in IP ID or TCP timestamp anyway.
// The memory is a direct-mapped cache of dupSlots entries, so the cost is
// fixed per packet; a collision forgets a packet, and its copy is then
// counted (as before this filter).
type dupFilter struct {
	slots *[dupSlots]dupEntry // allocated at the first SLL packet
	n     uint64              // copies dropped
}

type dupEntry struct {
	h     uint64
	t     int64
	where uint64 // interface index << 16 | packet type, +1 (0: empty)
}

const (
	dupSlots  = 4096
	dupWindow = int64(1e9) // a forwarded packet's two captures: µs apart, up to an egress qdisc's delay
	dupPrefix = 96         // bytes of the IP packet hashed: headers, TCP checksum and some payload
)

// copyOf reports whether the frame (of link type link, IP packet ip) is
// the second capture of a packet already seen on another interface or
// with another packet type; it remembers the frame otherwise.
func (d *dupFilter) copyOf(link pcap.LinkType, frame, ip []byte, t int64) bool {
	var where uint64
	switch link {
	case pcap.LinkSLL:
		if len(frame) < 16 {
			return false
		}
		where = uint64(binary.BigEndian.Uint16(frame[0:]))
	case pcap.LinkSLL2:
		if len(frame) < 20 {
			return false
		}
		where = uint64(binary.BigEndian.Uint32(frame[4:]))<<16 | uint64(frame[10])
	default:
		return false
	}
	where++
	if len(ip) < 20 {
		return false
	}
	h := ipHash(ip)
	if d.slots == nil {
		d.slots = new([dupSlots]dupEntry)
	}
	e := &d.slots[h%dupSlots]
	if e.where != 0 && e.h == h && e.where != where && t-e.t >= 0 && t-e.t < dupWindow {
		e.where = 0 // a third capture (a packet forwarded twice through namespaces) is its own check
		d.n++
		return true
	}
	*e = dupEntry{h: h, t: t, where: where}
	return false
}

// ipHash hashes an IP packet's length and first dupPrefix bytes without
// the fields a router rewrites (IPv4 TTL and header checksum, IPv6 hop
// limit).
func ipHash(ip []byte) uint64 {
	const prime = 0x100000001b3
	h := uint64(0xcbf29ce484222325) ^ uint64(len(ip))
	v6 := ip[0]>>4 == 6
	for i, b := range ip[:min(len(ip), dupPrefix)] {
		if v6 && i == 7 || !v6 && (i == 8 || i == 10 || i == 11) {
			continue
		}
		h = (h ^ uint64(b)) * prime
	}
	return h
}
