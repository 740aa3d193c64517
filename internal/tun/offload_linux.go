//go:build linux

package tun

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/checksum"
)

// vnetHdrLen is the size of the virtio-net header (struct virtio_net_hdr)
// before every packet read from or written to a device with IFF_VNET_HDR.
const vnetHdrLen = 10

// vnetHdr is a decoded virtio-net header. Multi-byte fields are in the
// host's byte order for TUN devices, little-endian on every platform
// sonde runs on (the kernel's default, virtio 1.0). Its hdr_len (bytes
// 2-3) is not read: the kernel sets it to the skb's
// linear length, not the headers', so segmentation finds the headers
// itself.
type vnetHdr struct {
	flags      uint8
	gsoType    uint8
	gsoSize    uint16
	csumStart  uint16
	csumOffset uint16
}

func decodeVnetHdr(b []byte) vnetHdr {
	return vnetHdr{
		flags:      b[0],
		gsoType:    b[1],
		gsoSize:    binary.LittleEndian.Uint16(b[4:]),
		csumStart:  binary.LittleEndian.Uint16(b[6:]),
		csumOffset: binary.LittleEndian.Uint16(b[8:]),
	}
}

// Offsets and flags in a TCP header.
const (
	tcpSeq   = 4
	tcpFlags = 13
	tcpCsum  = 16
	tcpFIN   = 0x01
	tcpPSH   = 0x08
	tcpCWR   = 0x80
	udpCsum  = 6
	protoTCP = 6
	protoUDP = 17
)

var errFrame = errors.New("tun: malformed offload frame")

// segment turns one frame read from the device (virtio-net header and
// packet) into the packets a wire would carry, and calls emit with each in
// order: the packet itself, with its checksum completed if the sender left
// it partial, or the MSS-sized segments of a TCP segmentation offload
// packet, each with its own IP length, IPv4 ID, sequence number, flags and
// complete checksums, as the kernel's own segmentation (tcp_gso_segment)
// would build them. scratch must hold the largest segment; the slices
// passed to emit are valid only during the call. It returns the number of
// packets emitted.
func segment(frame, scratch []byte, emit func([]byte)) (int, error) {
	if len(frame) <= vnetHdrLen {
		return 0, fmt.Errorf("%w: %d bytes", errFrame, len(frame))
	}
	h := decodeVnetHdr(frame)
	pkt := frame[vnetHdrLen:]
	switch h.gsoType &^ unix.VIRTIO_NET_HDR_GSO_ECN {
	case unix.VIRTIO_NET_HDR_GSO_NONE:
		if h.flags&unix.VIRTIO_NET_HDR_F_NEEDS_CSUM != 0 {
			if err := completeChecksum(pkt, int(h.csumStart), int(h.csumOffset)); err != nil {
				return 0, err
			}
		}
		emit(pkt)
		return 1, nil
	case unix.VIRTIO_NET_HDR_GSO_TCPV4, unix.VIRTIO_NET_HDR_GSO_TCPV6:
		return splitTCP(pkt, h, scratch, emit)
	}
	return 0, fmt.Errorf("%w: GSO type %#x (only TCP segmentation is enabled)", errFrame, h.gsoType)
}

// completeChecksum finishes a partial (CHECKSUM_PARTIAL) transport
// checksum: the field at start+off holds the pseudo-header sum, and the
// checksum covers everything from start to the end of the packet.
func completeChecksum(pkt []byte, start, off int) error {
	if start >= len(pkt) || start+off+2 > len(pkt) {
		return fmt.Errorf("%w: checksum at %d+%d in a %d-byte packet", errFrame, start, off, len(pkt))
	}
	c := checksum.Checksum(pkt[start:], 0)
	if c == 0 && off == udpCsum {
		c = 0xffff // a UDP checksum of 0 means "none" (RFC 768)
	}
	binary.BigEndian.PutUint16(pkt[start+off:], c)
	return nil
}

// splitTCP segments a TCP super-packet at h.gsoSize bytes of payload.
func splitTCP(pkt []byte, h vnetHdr, scratch []byte, emit func([]byte)) (int, error) {
	l4 := int(h.csumStart)
	if l4+20 > len(pkt) || h.gsoSize == 0 {
		return 0, fmt.Errorf("%w: TCP header at %d, GSO size %d, %d bytes", errFrame, l4, h.gsoSize, len(pkt))
	}
	v4 := pkt[0]>>4 == 4
	switch {
	case v4 && (l4 < 20 || pkt[9] != protoTCP || int(pkt[0]&15)*4 != l4):
		return 0, fmt.Errorf("%w: IPv4 TCP segmentation of a packet that is not IPv4 TCP at %d", errFrame, l4)
	case !v4 && (pkt[0]>>4 != 6 || l4 < 40):
		return 0, fmt.Errorf("%w: IPv6 TCP segmentation of a packet that is not IPv6", errFrame)
	}
	hdrEnd := l4 + int(pkt[l4+12]>>4)*4
	if hdrEnd < l4+20 || hdrEnd > len(pkt) {
		return 0, fmt.Errorf("%w: TCP header of %d bytes", errFrame, hdrEnd-l4)
	}
	mss := int(h.gsoSize)
	if hdrEnd+mss > len(scratch) {
		return 0, fmt.Errorf("%w: %d-byte segments exceed the %d-byte buffer", errFrame, hdrEnd+mss, len(scratch))
	}
	payload := pkt[hdrEnd:]
	seq := binary.BigEndian.Uint32(pkt[l4+tcpSeq:])
	var id uint16
	if v4 {
		id = binary.BigEndian.Uint16(pkt[4:])
	}
	flags := pkt[l4+tcpFlags]
	n := 0
	for off := 0; off < len(payload) || n == 0; off += mss {
		end := min(off+mss, len(payload))
		seg := scratch[:hdrEnd+end-off]
		copy(seg, pkt[:hdrEnd])
		copy(seg[hdrEnd:], payload[off:end])
		f := flags
		if end < len(payload) {
			f &^= tcpFIN | tcpPSH // only the last segment ends the push or the stream
		}
		if n > 0 {
			f &^= tcpCWR // the window reduction is signalled once
		}
		seg[l4+tcpFlags] = f
		binary.BigEndian.PutUint32(seg[l4+tcpSeq:], seq+uint32(off))
		tcpLen := len(seg) - l4
		var pseudo uint64
		if v4 {
			binary.BigEndian.PutUint16(seg[2:], uint16(len(seg)))
			binary.BigEndian.PutUint16(seg[4:], id+uint16(n))
			seg[10], seg[11] = 0, 0
			binary.BigEndian.PutUint16(seg[10:], checksum.Checksum(seg[:l4], 0))
			pseudo = checksum.Sum(seg[12:20], uint64(protoTCP)+uint64(tcpLen))
		} else {
			binary.BigEndian.PutUint16(seg[4:], uint16(len(seg)-40))
			pseudo = checksum.Sum(seg[8:40], uint64(protoTCP)+uint64(tcpLen))
		}
		seg[l4+tcpCsum], seg[l4+tcpCsum+1] = 0, 0
		binary.BigEndian.PutUint16(seg[l4+tcpCsum:], checksum.Checksum(seg[l4:], pseudo))
		emit(seg)
		n++
		if end == len(payload) {
			break
		}
	}
	return n, nil
}

// tcpSeg is what coalescing needs to know of a TCP packet.
type tcpSeg struct {
	v4      bool
	l4      int // TCP header offset
	hdrEnd  int // payload offset
	seq     uint32
	payload int
}

// parseTCP parses a complete IPv4 (without options) or IPv6 (without
// extension headers) TCP packet with payload; ok is false for anything else,
// which is written alone.
func parseTCP(p []byte) (s tcpSeg, ok bool) {
	if len(p) < 40 {
		return s, false
	}
	switch p[0] >> 4 {
	case 4:
		if p[0]&15 != 5 || p[9] != protoTCP || int(binary.BigEndian.Uint16(p[2:])) != len(p) ||
			binary.BigEndian.Uint16(p[6:])&0x3fff != 0 { // MF or a fragment offset
			return s, false
		}
		s.v4, s.l4 = true, 20
	case 6:
		if len(p) < 60 || p[6] != protoTCP || int(binary.BigEndian.Uint16(p[4:]))+40 != len(p) {
			return s, false
		}
		s.l4 = 40
	default:
		return s, false
	}
	s.hdrEnd = s.l4 + int(p[s.l4+12]>>4)*4
	if s.hdrEnd < s.l4+20 || s.hdrEnd >= len(p) {
		return s, false
	}
	s.seq = binary.BigEndian.Uint32(p[s.l4+tcpSeq:])
	s.payload = len(p) - s.hdrEnd
	return s, true
}

// TCP flags that keep a segment out of a coalesced frame: what the
// kernel's GRO would not merge either, and PSH, which may only end one.
const noCoalesce = tcpFIN | 0x02 /* SYN */ | 0x04 /* RST */ | 0x20 /* URG */ | tcpCWR

// joins reports whether q can follow p, the last segment of a run that
// starts with a segment of payload size mss, in one segmentation offload
// frame: the next bytes of the same flow, with identical headers but for
// the IP length and ID, and the sequence number, as GRO requires (the
// receiver treats the frame as one segment, so TCP options, timestamps
// included, must be equal).
func joins(p []byte, s tcpSeg, q []byte, t tcpSeg, mss int) bool {
	if t.v4 != s.v4 || t.hdrEnd != s.hdrEnd || t.seq != s.seq+uint32(s.payload) ||
		s.payload != mss || t.payload > mss || p[s.l4+tcpFlags]&(noCoalesce|tcpPSH) != 0 ||
		q[t.l4+tcpFlags]&^tcpPSH != p[s.l4+tcpFlags] {
		return false
	}
	if s.v4 {
		// TOS, DF, TTL, protocol, addresses; the ID counts up by one.
		if p[1] != q[1] || p[6] != q[6] || p[8] != q[8] || string(p[12:20]) != string(q[12:20]) ||
			binary.BigEndian.Uint16(q[4:]) != binary.BigEndian.Uint16(p[4:])+1 {
			return false
		}
	} else if string(p[:4]) != string(q[:4]) || p[7] != q[7] || string(p[8:40]) != string(q[8:40]) {
		return false // version, traffic class and flow label; hop limit; addresses
	}
	l := s.l4
	// Ports, acknowledgment number, window, urgent pointer, options.
	return string(p[l:l+4]) == string(q[l:l+4]) && string(p[l+8:l+12]) == string(q[l+8:l+12]) &&
		string(p[l+14:l+16]) == string(q[l+14:l+16]) && string(p[l+18:s.hdrEnd]) == string(q[l+18:t.hdrEnd])
}

// run returns how many packets from pkts[0] on form one frame: 1 when the
// first is not a TCP data segment or nothing joins it.
func run(pkts [][]byte) int {
	s, ok := parseTCP(pkts[0])
	if !ok || pkts[0][s.l4+tcpFlags]&noCoalesce != 0 {
		return 1
	}
	mss, total := s.payload, len(pkts[0])
	n := 1
	for ; n < len(pkts); n++ {
		t, ok := parseTCP(pkts[n])
		if !ok || total+t.payload > 65535 || !joins(pkts[n-1], s, pkts[n], t, mss) {
			break
		}
		total += t.payload
		s = t
	}
	return n
}

// frame writes pkts (a run) into buf as one frame: a virtio-net header
// asking for TCP segmentation at the first packet's payload size, and the
// first packet's headers with every payload after them. The TCP checksum
// is left partial (the pseudo-header sum; the kernel finishes it if it
// segments, and trusts it if it delivers the frame whole, as it trusts a
// frame that GRO built). It returns the frame's length.
func frame(buf []byte, pkts [][]byte) int {
	first := pkts[0]
	s, _ := parseTCP(first)
	hdr := buf[:vnetHdrLen]
	hdr[0] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM
	hdr[1] = unix.VIRTIO_NET_HDR_GSO_TCPV6
	if s.v4 {
		hdr[1] = unix.VIRTIO_NET_HDR_GSO_TCPV4
	}
	binary.LittleEndian.PutUint16(hdr[2:], uint16(s.hdrEnd))
	binary.LittleEndian.PutUint16(hdr[4:], uint16(s.payload))
	binary.LittleEndian.PutUint16(hdr[6:], uint16(s.l4))
	binary.LittleEndian.PutUint16(hdr[8:], tcpCsum)
	pkt := buf[vnetHdrLen:]
	n := copy(pkt, first)
	for _, q := range pkts[1:] {
		n += copy(pkt[n:], q[s.hdrEnd:])
	}
	pkt = pkt[:n]
	pkt[s.l4+tcpFlags] |= pkts[len(pkts)-1][s.l4+tcpFlags] & tcpPSH
	tcpLen := uint64(n - s.l4)
	var pseudo uint64
	if s.v4 {
		binary.BigEndian.PutUint16(pkt[2:], uint16(n))
		pkt[10], pkt[11] = 0, 0
		binary.BigEndian.PutUint16(pkt[10:], checksum.Checksum(pkt[:20], 0))
		pseudo = checksum.Sum(pkt[12:20], protoTCP+tcpLen)
	} else {
		binary.BigEndian.PutUint16(pkt[4:], uint16(n-40))
		pseudo = checksum.Sum(pkt[8:40], protoTCP+tcpLen)
	}
	binary.BigEndian.PutUint16(pkt[s.l4+tcpCsum:], ^checksum.Fold(pseudo))
	return vnetHdrLen + n
}
