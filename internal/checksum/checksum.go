// Package checksum computes the Internet checksum of IP, TCP, UDP and ICMP
// headers (RFC 1071) and updates one in place when a header word changes
// (RFC 1624).
package checksum

import "encoding/binary"

// Sum adds b, read as big-endian 16-bit words (an odd last byte padded with
// zero), to the partial sum s. A checksum over several pieces (a pseudo
// header, then a segment) passes the sum along; every piece but the last
// must have an even length.
//
// It adds 32-bit words: 2^16 ≡ 1 modulo 2^16−1, so their sum folds to the
// same one's complement sum as the 16-bit words', in half the additions.
func Sum(b []byte, s uint64) uint64 {
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	if len(b) >= 4 {
		s += uint64(binary.BigEndian.Uint32(b))
		b = b[4:]
	}
	if len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	return s
}

// Fold folds a partial sum to 16 bits and complements it: the value a
// checksum field holds.
func Fold(s uint64) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// Checksum is the Internet checksum of b, starting from the partial sum s
// (0, or the sum of a pseudo header).
func Checksum(b []byte, s uint64) uint16 { return Fold(Sum(b, s)) }

// Update rewrites the checksum field c after a 16-bit word it covers changed
// from old to new, without summing the rest again: HC' = ~(~HC + ~m + m')
// (RFC 1624, eqn. 3).
func Update(c []byte, old, new uint16) {
	s := uint64(^binary.BigEndian.Uint16(c)) + uint64(^old) + uint64(new)
	binary.BigEndian.PutUint16(c, Fold(s))
}
