package emulator

import (
	"encoding/binary"
	"net/netip"

	"github.com/sonde-project/sonde/internal/checksum"
)

// TooBig builds the ICMP error a router sends for a packet larger than the
// link MTU, so that path MTU discovery works across the emulator: for IPv4
// with DF set, "destination unreachable, fragmentation needed" (RFC 792,
// RFC 1191) carrying the next-hop MTU; for IPv6, "packet too big" (RFC
// 4443). from is the router address the error comes from (same family as
// the packet). It returns nil when no error is due: IPv4 without DF (the
// packet is simply dropped: the emulator does not fragment), fragments,
// ICMP errors themselves, or a mismatched from.
func TooBig(pkt []byte, mtu int, from netip.Addr) []byte {
	switch ipVersion(pkt) {
	case 4:
		if !from.Is4() || pkt[6]&0x40 == 0 || binary.BigEndian.Uint16(pkt[6:8])&0x1fff != 0 {
			return nil
		}
		if isICMPError(pkt[9], pkt, int(pkt[0]&15)*4) {
			return nil
		}
		quote := pkt[:min(len(pkt), 576-28)]
		b := make([]byte, 28+len(quote))
		b[0], b[1] = 0x45, 0xc0
		binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
		b[8], b[9] = 64, 1
		src := from.As4()
		copy(b[12:16], src[:])
		copy(b[16:20], pkt[12:16])
		binary.BigEndian.PutUint16(b[10:12], checksum.Checksum(b[:20], 0))
		b[20], b[21] = 3, 4
		binary.BigEndian.PutUint16(b[26:28], uint16(mtu))
		copy(b[28:], quote)
		binary.BigEndian.PutUint16(b[22:24], checksum.Checksum(b[20:], 0))
		return b
	case 6:
		if !from.Is6() || isICMPError(pkt[6], pkt, 40) {
			return nil
		}
		quote := pkt[:min(len(pkt), 1280-48)]
		b := make([]byte, 48+len(quote))
		b[0] = 0x60
		binary.BigEndian.PutUint16(b[4:6], uint16(8+len(quote)))
		b[6], b[7] = 58, 64
		src := from.As16()
		copy(b[8:24], src[:])
		copy(b[24:40], pkt[8:24])
		b[40] = 2
		binary.BigEndian.PutUint32(b[44:48], uint32(mtu))
		copy(b[48:], quote)
		// pseudo-header: addresses, upper-layer length, next header
		var ph [40]byte
		copy(ph[0:32], b[8:40])
		binary.BigEndian.PutUint32(ph[32:36], uint32(len(b)-40))
		ph[39] = 58
		binary.BigEndian.PutUint16(b[42:44], checksum.Checksum(b[40:], checksum.Sum(ph[:], 0)))
		return b
	}
	return nil
}

// isICMPError reports whether the packet is an ICMP error message, which
// must never trigger another one.
func isICMPError(proto byte, pkt []byte, off int) bool {
	if off >= len(pkt) {
		return false
	}
	switch proto {
	case 1:
		t := pkt[off]
		return t == 3 || t == 4 || t == 5 || t == 11 || t == 12
	case 58:
		return pkt[off] < 128
	}
	return false
}
