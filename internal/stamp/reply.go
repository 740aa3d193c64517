package stamp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// TWAMP-Light interworking (RFC 8762 §4.6). A STAMP Session-Sender packet
// is also a valid TWAMP-Light test packet (RFC 5357 §4.1.2: sequence number,
// timestamp, error estimate, then padding), so a TWAMP-Light reflector
// answers sonde's probes. Its reply (RFC 5357 §4.2.1, unauthenticated) is
// laid out like STAMP's for the first 41 octets:
//
//	0  Sequence Number (4)           24 Sender Sequence Number (4)
//	4  Timestamp (8)                 28 Sender Timestamp (8)
//	12 Error Estimate (2)            36 Sender Error Estimate (2)
//	14 MBZ (2)                       38 MBZ (2)
//	16 Receive Timestamp (8)         40 Sender TTL (1)
//
// and then carries padding, not STAMP's 3 MBZ octets and TLVs. Reflectors
// differ in how much padding they return: none (41 octets), the sender's
// padding less 27 octets so that both packets are the same size (RFC 5357
// §4.2.1's recommendation), or all of it (27 octets more than the probe).
const (
	// TWAMPLightBaseLen is the unauthenticated TWAMP reflector packet
	// without padding.
	TWAMPLightBaseLen = 41
	// TWAMPLightExtra is how much longer a TWAMP reflector packet is than
	// a sender packet with the same padding.
	TWAMPLightExtra = 27
	// MaxReplyLen bounds replies: the longest probe plus the padding a
	// TWAMP-Light reflector may add.
	MaxReplyLen = MaxPacketLen + TWAMPLightExtra
)

// ReplyFormat is the reflector packet format a reply was read in.
type ReplyFormat uint8

// Reply formats. FormatEither is a reply whose octets read the same in
// both formats (44 octets, no TLVs sent, zero where STAMP has MBZ): the
// measurement does not depend on which it is.
const (
	FormatUnknown ReplyFormat = iota
	FormatSTAMP
	FormatTWAMPLight
	FormatEither
	numFormats
)

// String is the name used in results.
func (f ReplyFormat) String() string {
	switch f {
	case FormatSTAMP:
		return "stamp"
	case FormatTWAMPLight:
		return "twamp-light"
	case FormatEither:
		return "stamp-or-twamp-light"
	}
	return "unknown"
}

// Reply parse errors: the reply is not a reflection of a probe in either
// format.
var (
	ErrReplyShort = fmt.Errorf("shorter than the %d-octet TWAMP-Light reflector packet", TWAMPLightBaseLen)
	ErrReplyLong  = fmt.Errorf("longer than %d octets (the longest probe plus TWAMP-Light's %d)", MaxReplyLen, TWAMPLightExtra)
)

// ParseReply reads a reflector's reply to a probe laid out as probe (the
// sender's template: only its length, SSID and first TLV matter) in
// whichever format the reflector speaks. It reads STAMP (RFC 8762 §4.3.1,
// RFC 8972 TLVs) when the reply echoes a non-zero SSID or reflects the
// probe's first TLV, and TWAMP-Light (RFC 5357 §4.2.1) when the reply is
// shorter than STAMP's base packet, is longer than a STAMP reply could be,
// or carries padding where STAMP reflects TLVs or has MBZ octets; then the
// packet has no SSID and no TLVs. A malformed TLV area in a STAMP reply
// gives the packet with an error wrapping ErrMalformTLV, as ParseReflector.
func ParseReply(b, probe []byte) (ReflectorPacket, ReplyFormat, error) {
	switch {
	case len(b) < TWAMPLightBaseLen:
		return ReflectorPacket{}, FormatUnknown, ErrReplyShort
	case len(b) > MaxReplyLen:
		return ReflectorPacket{}, FormatUnknown, ErrReplyLong
	}
	f := replyFormat(b, probe)
	if f == FormatSTAMP || f == FormatEither {
		p, err := ParseReflector(b)
		if err != nil && !errors.Is(err, ErrMalformTLV) {
			return ReflectorPacket{}, FormatUnknown, err
		}
		return p, f, err
	}
	return ReflectorPacket{
		Seq:             binary.BigEndian.Uint32(b[0:]),
		Timestamp:       Timestamp(binary.BigEndian.Uint64(b[4:])),
		Error:           ErrorEstimate(binary.BigEndian.Uint16(b[12:])),
		Receive:         Timestamp(binary.BigEndian.Uint64(b[16:])),
		SenderSeq:       binary.BigEndian.Uint32(b[24:]),
		SenderTimestamp: Timestamp(binary.BigEndian.Uint64(b[28:])),
		SenderError:     ErrorEstimate(binary.BigEndian.Uint16(b[36:])),
		SenderTTL:       b[40],
	}, FormatTWAMPLight, nil
}

// replyFormat tells the formats apart; b is 41 to MaxReplyLen octets.
func replyFormat(b, probe []byte) ReplyFormat {
	if len(b) < BaseLen || len(probe) < BaseLen || len(b) > MaxPacketLen {
		return FormatTWAMPLight
	}
	// A TWAMP-Light reflector leaves octets 14-15 zero (MBZ); an RFC 8972
	// reflector copies the SSID there.
	if ssid := binary.BigEndian.Uint16(probe[14:]); ssid != 0 && binary.BigEndian.Uint16(b[14:]) == ssid {
		return FormatSTAMP
	}
	if len(probe) >= BaseLen+TLVHeaderLen {
		// A STAMP reflector returns the TLVs in the order sent, with
		// their flags changed: the first must be where it was, of the
		// same type and length. TWAMP-Light padding is there otherwise.
		if len(b) >= BaseLen+TLVHeaderLen && b[BaseLen+1] == probe[BaseLen+1] &&
			binary.BigEndian.Uint16(b[BaseLen+2:]) == binary.BigEndian.Uint16(probe[BaseLen+2:]) {
			return FormatSTAMP
		}
		return FormatTWAMPLight
	}
	// A 44-octet probe: a STAMP reply is 44 octets with octets 41-43 zero.
	if len(b) == BaseLen && b[41] == 0 && b[42] == 0 && b[43] == 0 {
		return FormatEither
	}
	return FormatTWAMPLight
}

// Reasons a datagram from the reflector was not read as a reply.
const (
	reasonNotEcho = "does not echo the sequence number and timestamp of a probe sent"
)

// maxUnparsedKinds bounds the kinds Unparsed keeps apart, so that a peer
// sending datagrams of every size cannot grow it.
const maxUnparsedKinds = 8

// UnparsedKind counts datagrams of one size that were unparsed for one
// reason.
type UnparsedKind struct {
	Bytes  int
	Reason string
	Count  int
}

// Unparsed tallies datagrams from the reflector that were not a
// reflection of a probe: by size and reason for the first kinds seen, the
// rest in Other.
type Unparsed struct {
	Kinds []UnparsedKind
	Other int
}

// Add counts one datagram.
func (u *Unparsed) Add(bytes int, reason string) {
	for i := range u.Kinds {
		if k := &u.Kinds[i]; k.Bytes == bytes && k.Reason == reason {
			k.Count++
			return
		}
	}
	if len(u.Kinds) < maxUnparsedKinds {
		u.Kinds = append(u.Kinds, UnparsedKind{Bytes: bytes, Reason: reason, Count: 1})
		return
	}
	u.Other++
}

// Total is the number of datagrams counted.
func (u *Unparsed) Total() int {
	n := u.Other
	for _, k := range u.Kinds {
		n += k.Count
	}
	return n
}

// String says what arrived, e.g. "150 replies of 38 bytes, not STAMP or
// TWAMP-Light (shorter than the 41-octet TWAMP-Light reflector packet)".
func (u *Unparsed) String() string {
	var parts []string
	for _, k := range u.Kinds {
		parts = append(parts, fmt.Sprintf("%d %s of %d bytes, not STAMP or TWAMP-Light (%s)", k.Count, plural(k.Count, "reply", "replies"), k.Bytes, k.Reason))
	}
	if u.Other > 0 {
		parts = append(parts, fmt.Sprintf("%d more of other sizes", u.Other))
	}
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
