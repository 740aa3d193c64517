// Package stamp implements STAMP, the Simple Two-way Active Measurement
// Protocol (RFC 8762, unauthenticated mode) with the RFC 8972 extensions
// sonde uses (SSID, Extra Padding and Class of Service TLVs): the packet
// codec, a clock whose timestamps never step, sockets that report kernel
// receive timestamps and the received DSCP/ECN/TTL, the session reflector
// (which reflects only for sessions opened through sonde's control channel),
// and the isochronous session sender, which also reads the replies of
// TWAMP-Light reflectors (RFC 5357, RFC 8762 §4.6). The statistics
// computed from what the sender records live in internal/metrics; the
// client in internal/udptest.
package stamp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Packet layout (RFC 8762 §4.2.1, §4.3.1; RFC 8972 §3). All fields big
// endian. Both base packets are 44 octets; TLVs follow.
//
// Session-Sender:             Session-Reflector:
//
//	0  Sequence Number (4)      0  Sequence Number (4)
//	4  Timestamp (8)            4  Timestamp (8)
//	12 Error Estimate (2)       12 Error Estimate (2)
//	14 SSID (2)                 14 SSID (2)
//	16 MBZ (28)                 16 Receive Timestamp (8)
//	                            24 Session-Sender Sequence Number (4)
//	                            28 Session-Sender Timestamp (8)
//	                            36 Session-Sender Error Estimate (2)
//	                            38 MBZ (2)
//	                            40 Session-Sender TTL (1)
//	                            41 MBZ (3)
const (
	BaseLen      = 44
	TLVHeaderLen = 4
	// DefaultPort is the IANA port of STAMP (and OWAMP/TWAMP test).
	DefaultPort = 862
	// MaxPacketLen bounds test packets: a UDP payload that fits a
	// 1500-byte IPv6 packet.
	MaxPacketLen = 1452
)

// TLV types (RFC 8972 §4, IANA "STAMP TLV Types").
const (
	TypeExtraPadding = 1
	TypeCoS          = 4
)

// TLV flags (RFC 8972 §4): Unrecognized, Malformed, Integrity failed. A
// Session-Sender sets U; a Session-Reflector clears it on TLVs it knows.
const (
	FlagU = 0x80
	FlagM = 0x40
	FlagI = 0x20
)

// Parse errors.
var (
	ErrShort      = errors.New("stamp: packet shorter than the 44-octet base packet")
	ErrLong       = fmt.Errorf("stamp: packet longer than %d octets", MaxPacketLen)
	ErrMalformTLV = errors.New("stamp: malformed TLV")
)

// TLV is one RFC 8972 TLV: flags, type, and a value of at most 65535 octets.
type TLV struct {
	Flags uint8
	Type  uint8
	Value []byte
}

// Len is the TLV's size on the wire.
func (t TLV) Len() int { return TLVHeaderLen + len(t.Value) }

func (t TLV) appendTo(b []byte) []byte {
	b = append(b, t.Flags, t.Type)
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.Value)))
	return append(b, t.Value...)
}

// ParseTLVs reads the TLVs of b (the bytes after a base packet). On a
// malformed TLV (a header cut short or a length beyond the packet) it
// returns the TLVs before it with an error wrapping ErrMalformTLV. Values
// alias b.
func ParseTLVs(b []byte) ([]TLV, error) {
	var out []TLV
	for off := 0; off < len(b); {
		if len(b)-off < TLVHeaderLen {
			return out, fmt.Errorf("%w: %d octets left at offset %d, less than a TLV header", ErrMalformTLV, len(b)-off, off)
		}
		n := int(binary.BigEndian.Uint16(b[off+2:]))
		if off+TLVHeaderLen+n > len(b) {
			return out, fmt.Errorf("%w: type %d at offset %d claims %d octets, %d left", ErrMalformTLV, b[off+1], off, n, len(b)-off-TLVHeaderLen)
		}
		out = append(out, TLV{Flags: b[off], Type: b[off+1], Value: b[off+TLVHeaderLen : off+TLVHeaderLen+n]})
		off += TLVHeaderLen + n
	}
	return out, nil
}

// CoS is the RFC 8972 §4.4 Class of Service TLV value (4 octets):
//
//	DSCP1 (6 bits) | DSCP2 (6) | ECN (2) | RP (2) | Reserved (16)
//
// DSCP1 is the DSCP the Session-Sender asks the reflector to mark the
// reflected packet with; DSCP2 and ECN are what the reflector received; RP
// is 0 when the reflector used DSCP1 and 1 when its policy did not allow it.
type CoS struct {
	DSCP1, DSCP2, ECN, RP uint8
}

// CoSLen is the length of the CoS TLV value.
const CoSLen = 4

// TLV returns the CoS as a TLV with the given flags.
func (c CoS) TLV(flags uint8) TLV {
	return TLV{Flags: flags, Type: TypeCoS, Value: c.put(make([]byte, CoSLen))}
}

func (c CoS) put(v []byte) []byte {
	v[0] = (c.DSCP1&0x3f)<<2 | (c.DSCP2&0x3f)>>4
	v[1] = (c.DSCP2&0x0f)<<4 | (c.ECN&0x3)<<2 | c.RP&0x3
	v[2], v[3] = 0, 0
	return v
}

// ParseCoS reads a CoS TLV value.
func ParseCoS(v []byte) (CoS, error) {
	if len(v) != CoSLen {
		return CoS{}, fmt.Errorf("%w: CoS value of %d octets, want %d", ErrMalformTLV, len(v), CoSLen)
	}
	return CoS{
		DSCP1: v[0] >> 2,
		DSCP2: (v[0]&0x3)<<4 | v[1]>>4,
		ECN:   (v[1] >> 2) & 0x3,
		RP:    v[1] & 0x3,
	}, nil
}

// ErrorEstimate is the RFC 4656 §4.1.2 error estimate: S (clock synchronised
// to UTC), Z (0: NTP timestamp format, 1: PTPv2), Scale (6 bits) and
// Multiplier (8 bits); the error is Multiplier × 2^(Scale − 32) seconds.
type ErrorEstimate uint16

// NewErrorEstimate encodes an error of the given seconds (rounded up to the
// next representable value, at least 2^−32 s) with NTP timestamps.
func NewErrorEstimate(synced bool, seconds float64) ErrorEstimate {
	var e ErrorEstimate
	if synced {
		e |= 0x8000
	}
	scale, mult := 0, math.Ceil(seconds*(1<<32))
	for mult > 255 && scale < 63 {
		scale++
		mult = math.Ceil(seconds * (1 << 32) / math.Exp2(float64(scale)))
	}
	mult = math.Min(math.Max(mult, 1), 255)
	return e | ErrorEstimate(scale)<<8 | ErrorEstimate(mult)
}

// Synced reports the S bit.
func (e ErrorEstimate) Synced() bool { return e&0x8000 != 0 }

// PTP reports the Z bit (PTPv2 timestamp format).
func (e ErrorEstimate) PTP() bool { return e&0x4000 != 0 }

// Seconds returns the estimated error.
func (e ErrorEstimate) Seconds() float64 {
	scale := int(e>>8) & 0x3f
	return float64(e&0xff) * math.Exp2(float64(scale-32))
}

// SenderPacket is a Session-Sender test packet.
type SenderPacket struct {
	Seq       uint32
	Timestamp Timestamp
	Error     ErrorEstimate
	SSID      uint16
	TLVs      []TLV
}

// AppendTo appends the packet to b, padded with an Extra Padding TLV to
// size octets when size exceeds the packet's own length. A size between the
// packet's length and that length + 4 (too little room for a TLV header)
// is an error, as is a size above MaxPacketLen.
func (p *SenderPacket) AppendTo(b []byte, size int) ([]byte, error) {
	n := BaseLen
	for _, t := range p.TLVs {
		n += t.Len()
	}
	if size > MaxPacketLen {
		return b, ErrLong
	}
	pad := size - n
	if pad > 0 && pad < TLVHeaderLen {
		return b, fmt.Errorf("stamp: size %d leaves %d octets, too few for a padding TLV (want %d or ≥ %d)", size, pad, n, n+TLVHeaderLen)
	}
	b = binary.BigEndian.AppendUint32(b, p.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Timestamp))
	b = binary.BigEndian.AppendUint16(b, uint16(p.Error))
	b = binary.BigEndian.AppendUint16(b, p.SSID)
	b = append(b, make([]byte, BaseLen-16)...)
	for _, t := range p.TLVs {
		b = t.appendTo(b)
	}
	if pad >= TLVHeaderLen {
		b = TLV{Flags: FlagU, Type: TypeExtraPadding, Value: make([]byte, pad-TLVHeaderLen)}.appendTo(b)
	}
	return b, nil
}

// ParseSender reads a Session-Sender packet. A malformed TLV area gives the
// packet with the TLVs before the fault and an error wrapping ErrMalformTLV;
// other errors give the zero packet.
func ParseSender(b []byte) (SenderPacket, error) {
	if len(b) < BaseLen {
		return SenderPacket{}, ErrShort
	}
	if len(b) > MaxPacketLen {
		return SenderPacket{}, ErrLong
	}
	p := SenderPacket{
		Seq:       binary.BigEndian.Uint32(b[0:]),
		Timestamp: Timestamp(binary.BigEndian.Uint64(b[4:])),
		Error:     ErrorEstimate(binary.BigEndian.Uint16(b[12:])),
		SSID:      binary.BigEndian.Uint16(b[14:]),
	}
	var err error
	p.TLVs, err = ParseTLVs(b[BaseLen:])
	return p, err
}

// ReflectorPacket is a Session-Reflector test packet.
type ReflectorPacket struct {
	Seq             uint32
	Timestamp       Timestamp // T3, the reflector's send time
	Error           ErrorEstimate
	SSID            uint16
	Receive         Timestamp // T2, the reflector's receive time
	SenderSeq       uint32
	SenderTimestamp Timestamp // T1, copied
	SenderError     ErrorEstimate
	SenderTTL       uint8
	TLVs            []TLV
}

// AppendTo appends the packet to b.
func (p *ReflectorPacket) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, p.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Timestamp))
	b = binary.BigEndian.AppendUint16(b, uint16(p.Error))
	b = binary.BigEndian.AppendUint16(b, p.SSID)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Receive))
	b = binary.BigEndian.AppendUint32(b, p.SenderSeq)
	b = binary.BigEndian.AppendUint64(b, uint64(p.SenderTimestamp))
	b = binary.BigEndian.AppendUint16(b, uint16(p.SenderError))
	b = append(b, 0, 0, p.SenderTTL, 0, 0, 0)
	for _, t := range p.TLVs {
		b = t.appendTo(b)
	}
	return b
}

// ParseReflector reads a Session-Reflector packet, with the same error
// rules as ParseSender.
func ParseReflector(b []byte) (ReflectorPacket, error) {
	if len(b) < BaseLen {
		return ReflectorPacket{}, ErrShort
	}
	if len(b) > MaxPacketLen {
		return ReflectorPacket{}, ErrLong
	}
	p := ReflectorPacket{
		Seq:             binary.BigEndian.Uint32(b[0:]),
		Timestamp:       Timestamp(binary.BigEndian.Uint64(b[4:])),
		Error:           ErrorEstimate(binary.BigEndian.Uint16(b[12:])),
		SSID:            binary.BigEndian.Uint16(b[14:]),
		Receive:         Timestamp(binary.BigEndian.Uint64(b[16:])),
		SenderSeq:       binary.BigEndian.Uint32(b[24:]),
		SenderTimestamp: Timestamp(binary.BigEndian.Uint64(b[28:])),
		SenderError:     ErrorEstimate(binary.BigEndian.Uint16(b[36:])),
		SenderTTL:       b[40],
	}
	var err error
	p.TLVs, err = ParseTLVs(b[BaseLen:])
	return p, err
}

// FindCoS returns the first CoS TLV of tlvs that the peer recognised (U
// flag clear) and that parses.
func FindCoS(tlvs []TLV) (CoS, bool) {
	for _, t := range tlvs {
		if t.Type == TypeCoS && t.Flags&(FlagU|FlagM) == 0 {
			if c, err := ParseCoS(t.Value); err == nil {
				return c, true
			}
		}
	}
	return CoS{}, false
}
