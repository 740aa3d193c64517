// Package spinbit reads QUIC packet headers as an on-path observer sees
// them (RFC 8999 invariants, v1, v2 and late drafts) and estimates RTT from
// the latency spin bit (RFC 9000 §17.4, RFC 9312) with the validity
// heuristics of metrics.md §8: reordering glitches, implausible samples,
// app-limited edges, non-spinning and random-spin flows, connection-ID
// changes. It also reads the Q/L loss bits of RFC 9506 (LossObserver).
package spinbit

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// QUIC versions sonde recognises.
const (
	Version1 uint32 = 0x00000001
	Version2 uint32 = 0x6b3343cf
)

// KnownVersion reports whether v is QUIC v1, v2 or an IETF draft 29–34
// (the drafts deployed before v1), whose long-header layout sonde parses.
func KnownVersion(v uint32) bool {
	return v == Version1 || v == Version2 || (v >= 0xff00001d && v <= 0xff000022)
}

// Family is what a long header's version says about a datagram.
type Family uint8

// Version families. Only IETF is parsed beyond the invariants.
const (
	NotQUIC     Family = iota
	IETF               // v1, v2, drafts 29-34 (KnownVersion)
	Negotiation        // version 0: version negotiation
	Greased            // 0x?a?a?a?a, reserved to exercise negotiation (RFC 9000 §15)
	Draft              // another IETF draft, 0xff0000xx
	GoogleQUIC         // Q0xx and T0xx: Google's own QUIC
	Private            // another version with a plausible long header
)

// Detect reports whether datagram b starts with a QUIC long header and of
// which family its version is, so that QUIC is found on any UDP port. A
// version outside the known families is taken as QUIC only in a datagram
// of at least 1200 bytes (the size a client pads its first Initial to,
// RFC 9000 §14.1) with the fixed bit set and plausible connection-ID
// lengths: other UDP protocols (RTP's first byte is 0x80) rarely pass.
func Detect(b []byte) (Family, uint32) {
	if len(b) < 7 || b[0]&0x80 == 0 {
		return NotQUIC, 0
	}
	v := binary.BigEndian.Uint32(b[1:])
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	switch {
	case KnownVersion(v):
		return IETF, v
	case b[0]&0x40 == 0:
		return NotQUIC, 0
	case (b[1] == 'Q' || b[1] == 'T') && b[2] == '0' && digit(b[3]) && digit(b[4]):
		return GoogleQUIC, v
	}
	dl := int(b[5])
	if len(b) < 7+dl || dl > 20 && v != 0 || int(b[6+dl]) > 20 && v != 0 || len(b) < 7+dl+int(b[6+dl]) {
		return NotQUIC, 0
	}
	switch {
	case v == 0:
		return Negotiation, v
	case v&0x0f0f0f0f == 0x0a0a0a0a:
		return Greased, v
	case v>>8 == 0xff0000:
		return Draft, v
	case v>>4 == 0xfaceb00 || len(b) >= 1200:
		return Private, v
	}
	return NotQUIC, 0
}

// VersionName names a QUIC version: v1, v2, draft-N, Google QUIC's Q046,
// Facebook's mvfst, or the number.
func VersionName(v uint32) string {
	b := [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
	switch {
	case v == Version1:
		return "v1"
	case v == Version2:
		return "v2"
	case v>>8 == 0xff0000:
		return fmt.Sprintf("draft-%d", v&0xff)
	case (b[0] == 'Q' || b[0] == 'T') && b[1] == '0' && b[2] >= '0' && b[2] <= '9' && b[3] >= '0' && b[3] <= '9':
		return "gquic-" + string(b[:])
	case v>>4 == 0xfaceb00:
		return fmt.Sprintf("mvfst-%#08x", v)
	}
	return fmt.Sprintf("%#08x", v)
}

// PacketType of a long-header packet, independent of the version's
// encoding.
type PacketType uint8

// Long-header packet types.
const (
	Initial PacketType = iota + 1
	ZeroRTT
	Handshake
	Retry
	VersionNegotiation
	OneRTT // short header
)

var typeNames = [...]string{"?", "initial", "0rtt", "handshake", "retry", "version-negotiation", "1rtt"}

func (t PacketType) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "?"
}

// Header is one QUIC packet's clear-text header. DCID and SCID point into
// the datagram.
type Header struct {
	Long    bool
	Type    PacketType
	Version uint32
	DCID    []byte
	SCID    []byte
	// Spin is the latency spin bit of a short header.
	Spin bool
	// FixedBit is 0x40 of the first byte; RFC 9287 lets endpoints grease it.
	FixedBit bool
	// Size is the packet's length in the datagram.
	Size int
	// First is the first byte: a short header's reserved bits carry the
	// loss bits when negotiated (LossObserver).
	First byte
}

// Errors from Parse.
var (
	ErrShort   = errors.New("quic: truncated header")
	ErrVersion = errors.New("quic: unknown version")
)

func varint(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0, false
	}
	v = uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n, true
}

// Parse reads the packet at the start of datagram b. dcidLen is the length
// of short-header connection IDs on this path (learned from the handshake;
// 0 if unknown). It returns the rest of the datagram: coalesced packets
// follow a long-header packet that carries a Length field.
func Parse(b []byte, dcidLen int, h *Header) (rest []byte, err error) {
	*h = Header{}
	if len(b) == 0 {
		return nil, ErrShort
	}
	h.FixedBit = b[0]&0x40 != 0
	h.First = b[0]
	if b[0]&0x80 == 0 {
		h.Type = OneRTT
		if len(b) < 1+dcidLen {
			return nil, ErrShort
		}
		h.Spin = b[0]&0x20 != 0
		h.DCID = b[1 : 1+dcidLen]
		h.Size = len(b)
		return nil, nil
	}
	h.Long = true
	if len(b) < 7 {
		return nil, ErrShort
	}
	h.Version = binary.BigEndian.Uint32(b[1:])
	p := 5
	dl := int(b[p])
	p++
	if dl > 255 || len(b) < p+dl+1 {
		return nil, ErrShort
	}
	h.DCID = b[p : p+dl]
	p += dl
	sl := int(b[p])
	p++
	if len(b) < p+sl {
		return nil, ErrShort
	}
	h.SCID = b[p : p+sl]
	p += sl
	if h.Version == 0 {
		h.Type = VersionNegotiation
		h.Size = len(b)
		return nil, nil
	}
	if !KnownVersion(h.Version) {
		h.Size = len(b)
		return nil, ErrVersion
	}
	if dl > 20 || sl > 20 {
		return nil, ErrShort // v1 and v2 limit connection IDs to 20 bytes
	}
	bits := b[0] >> 4 & 3
	if h.Version == Version2 {
		h.Type = [4]PacketType{Retry, Initial, ZeroRTT, Handshake}[bits]
	} else {
		h.Type = [4]PacketType{Initial, ZeroRTT, Handshake, Retry}[bits]
	}
	if h.Type == Retry {
		h.Size = len(b)
		return nil, nil
	}
	if h.Type == Initial {
		tl, n, ok := varint(b[p:])
		if !ok || uint64(len(b)-p-n) < tl {
			return nil, ErrShort
		}
		p += n + int(tl)
	}
	l, n, ok := varint(b[p:])
	if !ok || uint64(len(b)-p-n) < l {
		return nil, ErrShort
	}
	p += n + int(l)
	h.Size = p
	return b[p:], nil
}

// Invariant reads the version-independent part of a long header (RFC 8999
// §5.1: form bit, version, DCID and SCID with their lengths), whatever the
// version and whatever its fixed bit: the fixed bit and everything after
// the SCID belong to the version. Connection IDs longer than 20 bytes are
// refused (every known version limits them to 20; the invariants allow
// 255, but a longer one is far likelier random UDP than QUIC). A datagram
// that passes is only a candidate: random UDP passes about one time in
// 300, so a caller confirms it across packets (the peer's answer carrying
// the same version and echoing the SCID).
func Invariant(b []byte) (version uint32, dcid, scid []byte, ok bool) {
	if len(b) < 7 || b[0]&0x80 == 0 {
		return 0, nil, nil, false
	}
	dl := int(b[5])
	if dl > 20 || len(b) < 7+dl {
		return 0, nil, nil, false
	}
	sl := int(b[6+dl])
	if sl > 20 || len(b) < 7+dl+sl {
		return 0, nil, nil, false
	}
	return binary.BigEndian.Uint32(b[1:]), b[6 : 6+dl], b[7+dl : 7+dl+sl], true
}
