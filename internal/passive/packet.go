package passive

import "encoding/binary"

// ipPacket is a decoded IP header; slices point into the capture buffer.
type ipPacket struct {
	v6 bool
	// src and dst are the addresses as two big-endian words each (IPv4
	// mapped into IPv6), the form flow keys compare.
	src, dst [2]uint64
	proto    uint8
	length   int    // IP total length from the header
	l4       []byte // transport header and payload as captured (may be cut by the snap length)
	l4Len    int    // transport header and payload length from the IP header
	fragment bool   // not the first fragment, or more fragments follow
	// key, srcLo (the source is key.lo) and hash (the flow table's) are
	// the packet's flow when hashed: computed ahead by the reader, for a
	// packet that starts a run of its flow (readahead.go).
	key    flowKey
	hash   uint64
	srcLo  bool
	hashed bool
}

// decodeIP parses an IPv4 or IPv6 header, skipping IPv6 extension headers.
func decodeIP(b []byte, p *ipPacket) bool {
	if len(b) < 20 {
		return false
	}
	switch b[0] >> 4 {
	case 4:
		ihl := int(b[0]&0x0f) * 4
		total := int(binary.BigEndian.Uint16(b[2:]))
		if total == 0 {
			// A segmentation-offload (TSO/GSO, BIG TCP) packet captured
			// before the NIC splits it: the stack leaves the length 0
			// above 64 KiB. Take the frame's, as tshark does.
			total = len(b)
		}
		if ihl < 20 || total < ihl || len(b) < ihl {
			return false
		}
		if total < len(b) {
			b = b[:total] // Ethernet padding
		}
		p.v6 = false
		const mapped = 0xffff << 32
		p.src = [2]uint64{0, mapped | uint64(binary.BigEndian.Uint32(b[12:]))}
		p.dst = [2]uint64{0, mapped | uint64(binary.BigEndian.Uint32(b[16:]))}
		p.proto = b[9]
		p.length = total
		frag := binary.BigEndian.Uint16(b[6:])
		p.fragment = frag&0x3fff != 0
		p.l4 = b[ihl:]
		p.l4Len = total - ihl
		return true
	case 6:
		if len(b) < 40 {
			return false
		}
		total := 40 + int(binary.BigEndian.Uint16(b[4:]))
		if total < len(b) {
			b = b[:total]
		}
		p.v6 = true
		p.src = [2]uint64{binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:])}
		p.dst = [2]uint64{binary.BigEndian.Uint64(b[24:]), binary.BigEndian.Uint64(b[32:])}
		p.length = total
		p.fragment = false
		next, off := b[6], 40
		for range 8 {
			switch next {
			case 0, 43, 60: // hop-by-hop, routing, destination options
				if len(b) < off+8 {
					return false
				}
				next, off = b[off], off+8+int(b[off+1])*8
			case 44: // fragment
				if len(b) < off+8 {
					return false
				}
				fo := binary.BigEndian.Uint16(b[off+2:])
				p.fragment = fo&0xfff9 != 0
				next, off = b[off], off+8
			default:
				if off > len(b) {
					return false
				}
				p.proto = next
				p.l4 = b[off:]
				p.l4Len = max(total-off, 0)
				return true
			}
		}
	}
	return false
}

// TCP flags.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagPSH = 0x08
	flagACK = 0x10
)

type tcpSegment struct {
	sport, dport uint16
	seq, ack     uint32
	flags        uint8
	window       uint16
	payload      []byte // as captured
	payloadLen   int    // on the wire, from the IP length (snap length independent)
	hasTS        bool
	tsval, tsecr uint32
	mss          uint16
	wscale       int8 // -1: absent
	sackPerm     bool
	sackBlocks   uint8
}

// decodeTCP parses a TCP header; l4Len is the segment's length from the IP
// header, so payload sizes survive a short capture snap length.
func decodeTCP(b []byte, l4Len int, s *tcpSegment) bool {
	if len(b) < 20 {
		return false
	}
	off := int(b[12]>>4) * 4
	if off < 20 || off > len(b) {
		return false
	}
	s.sport = binary.BigEndian.Uint16(b)
	s.dport = binary.BigEndian.Uint16(b[2:])
	s.seq = binary.BigEndian.Uint32(b[4:])
	s.ack = binary.BigEndian.Uint32(b[8:])
	s.flags = b[13]
	s.window = binary.BigEndian.Uint16(b[14:])
	s.payload = b[off:]
	s.payloadLen = max(l4Len-off, len(s.payload))
	s.hasTS, s.mss, s.wscale, s.sackPerm, s.sackBlocks = false, 0, -1, false, 0
	// Nearly every segment of a connection with timestamps carries just
	// NOP, NOP, timestamps (RFC 7323 appendix A's layout).
	if off == 32 && binary.BigEndian.Uint32(b[20:]) == 0x0101080a {
		s.hasTS = true
		s.tsval = binary.BigEndian.Uint32(b[24:])
		s.tsecr = binary.BigEndian.Uint32(b[28:])
		return true
	}
	opts := b[20:off]
	for len(opts) > 0 {
		kind := opts[0]
		if kind == 0 {
			break
		}
		if kind == 1 {
			opts = opts[1:]
			continue
		}
		if len(opts) < 2 || int(opts[1]) < 2 || int(opts[1]) > len(opts) {
			break
		}
		v := opts[2:opts[1]]
		switch {
		case kind == 2 && len(v) == 2:
			s.mss = binary.BigEndian.Uint16(v)
		case kind == 3 && len(v) == 1:
			s.wscale = int8(min(v[0], 14))
		case kind == 4:
			s.sackPerm = true
		case kind == 5:
			s.sackBlocks = uint8(len(v) / 8)
		case kind == 8 && len(v) == 8:
			s.hasTS = true
			s.tsval = binary.BigEndian.Uint32(v)
			s.tsecr = binary.BigEndian.Uint32(v[4:])
		}
		opts = opts[opts[1]:]
	}
	return true
}
