package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The layout of a TPACKET_V3 receive ring (linux/if_packet.h), read here
// without cgo so that the walk is portable and testable on any OS: the
// ring is blocks of one size; a block the kernel handed over (status
// TP_STATUS_USER) starts with a tpacket_block_desc and holds num_pkts
// packets, each a tpacket3_hdr, a sockaddr_ll and the packet, chained by
// tp_next_offset. The kernel writes the fields in the host's byte order.
//
// The ring is memory the kernel writes: every offset and length read from
// it is checked against the block before it is used, so a corrupt block
// is reported, never read out of bounds.
const (
	// tpacket_block_desc: version, offset_to_priv, then tpacket_hdr_v1.
	blockStatusOff   = 8
	blockNumPktsOff  = 12
	blockFirstPktOff = 16
	blockLenOff      = 20
	blockDescLen     = 48 // with seq_num and the two timestamps

	// tpacket3_hdr.
	pktNextOff    = 0
	pktSecOff     = 4
	pktNsecOff    = 8
	pktSnaplenOff = 12
	pktLenOff     = 16
	pktMacOff     = 24
	pktHdrLen     = 48 // TPACKET_ALIGN(sizeof(struct tpacket3_hdr))
	// The sockaddr_ll after it: sll_pkttype at byte 10 of 20.
	pktPkttypeOff = pktHdrLen + 10
	pktMinLen     = pktHdrLen + 20 // TPACKET3_HDRLEN

	statusUser     = 1 // TP_STATUS_USER: the block is the reader's
	pktOutgoing    = 4 // PACKET_OUTGOING
	maxNanoseconds = 999_999_999
)

var errBlock = errors.New("malformed TPACKET_V3 block")

// blockReader walks the packets of one block the kernel handed over.
type blockReader struct {
	b    []byte // the block, up to its blk_len
	off  int    // of the next packet; 0 when the walk is over
	left int    // packets not yet read
}

// openBlock checks a block's descriptor: b is the whole block as mapped
// (its size is the ring's block size).
func openBlock(b []byte) (blockReader, error) {
	if len(b) < blockDescLen {
		return blockReader{}, fmt.Errorf("%w: %d bytes, shorter than its descriptor", errBlock, len(b))
	}
	ne := binary.NativeEndian
	n := ne.Uint32(b[blockNumPktsOff:])
	first := ne.Uint32(b[blockFirstPktOff:])
	blen := ne.Uint32(b[blockLenOff:])
	switch {
	case uint64(blen) > uint64(len(b)):
		return blockReader{}, fmt.Errorf("%w: length %d beyond the block's %d bytes", errBlock, blen, len(b))
	case n == 0:
		// A block retired empty (a timeout with no traffic).
		return blockReader{b: b[:blen]}, nil
	case first < blockDescLen || uint64(first)+pktMinLen > uint64(blen):
		return blockReader{}, fmt.Errorf("%w: first packet at %d of %d bytes", errBlock, first, blen)
	case uint64(n) > uint64(blen)/pktMinLen:
		return blockReader{}, fmt.Errorf("%w: %d packets cannot fit in %d bytes", errBlock, n, blen)
	}
	return blockReader{b: b[:blen], off: int(first), left: int(n)}, nil
}

// next fills p with the block's next packet and reports whether there was
// one; a packet whose header does not fit the block ends the walk with an
// error. p.Data aliases the block.
func (r *blockReader) next(p *Packet) (bool, error) {
	if r.left == 0 {
		return false, nil
	}
	off := r.off
	b := r.b
	if off <= 0 || off > len(b)-pktMinLen {
		r.left = 0
		return false, fmt.Errorf("%w: packet at %d of %d bytes", errBlock, off, len(b))
	}
	ne := binary.NativeEndian
	h := b[off:]
	next := ne.Uint32(h[pktNextOff:])
	snap := ne.Uint32(h[pktSnaplenOff:])
	length := ne.Uint32(h[pktLenOff:])
	mac := uint32(ne.Uint16(h[pktMacOff:]))
	nsec := ne.Uint32(h[pktNsecOff:])
	if mac < pktMinLen || uint64(mac)+uint64(snap) > uint64(len(h)) || nsec > maxNanoseconds {
		r.left = 0
		return false, fmt.Errorf("%w: packet at %d: data at +%d, %d bytes, beyond the block's %d", errBlock, off, mac, snap, len(b))
	}
	r.left--
	// The next packet follows this one's data (the last one's next
	// offset is 0); one that does not is the next call's error.
	r.off = 0
	if uint64(next) >= uint64(mac)+uint64(snap) && uint64(off)+uint64(next) <= uint64(len(b)) {
		r.off = off + int(next)
	}
	p.TimeNs = int64(ne.Uint32(h[pktSecOff:]))*1e9 + int64(nsec)
	p.Data = h[mac : mac+snap : mac+snap]
	p.Length = int(max(length, snap))
	p.Outgoing = h[pktPkttypeOff] == pktOutgoing
	return true, nil
}
