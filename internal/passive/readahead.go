package passive

import (
	"encoding/binary"
	"unsafe"

	"github.com/sonde-project/sonde/internal/pcap"
)

// batchLen is how many packets the reader decodes ahead of their
// analysis: enough that the memory loads of the first packets' flows
// are done by the time they are analysed.
const batchLen = 16

// decoded is a packet decoded ahead of its analysis (frameOf).
type decoded struct {
	ip []byte // pcap.Network's
	p  ipPacket
	ok bool // decodeIP's
}

// batch holds the packets of a source read together and their decoded
// forms.
type readAhead struct {
	ps [batchLen]pcap.Packet
	ds [batchLen]decoded
}

// readBatched analyses the rest of one source (its current packet and
// every one after it) when no other source is open or due: a batch of
// packets at a time, whose flows' table slots and state are prefetched
// (software pipelining) before the first is analysed. Between one train
// of a flow and the next the analyser sees thousands of other flows, so
// a flow's state is out of the cache when its packet comes; one packet
// at a time, its lookup waited a full memory latency for the slot, then
// for the flow, then for its state. The order of analysis, and so every
// figure, is that of frame one packet at a time: the prefetches are
// hints, and a flow that changes in between (created, evicted) only
// makes one useless.
func (a *Analyzer) readBatched(s *source) {
	a.frame(s)
	if a.ahead == nil {
		a.ahead = new(readAhead)
	}
	b := a.ahead
	for {
		n := s.nextBatch(b.ps[:])
		if n == 0 {
			return
		}
		a.decodeAhead(b.ps[:n], b.ds[:n])
		for i := range n {
			a.frameOf(s, &b.ps[i], &b.ds[i])
		}
	}
}

// decodeAhead decodes packets ps into ds and prefetches, in three passes
// over the batch so that the loads of one pass overlap: the table slots
// of the flows, then the flows' first lines (the key the lookup compares,
// the state pointers), then their TCP or QUIC state. Only a packet that
// starts a run of its flow in the batch is keyed and hashed (the key,
// side and hash are kept for its lookup): the others take the previous
// packet's flow (Analyzer.lastFlow). A run is told by a cheap signature,
// the same in both directions; a collision only leaves a packet to be
// hashed by its lookup.
func (a *Analyzer) decodeAhead(ps []pcap.Packet, ds []decoded) {
	t := a.flows
	mask := uint64(len(t.slots) - 1)
	var prev [3]uint64
	var runs [batchLen]*ipPacket
	nr := 0
	for i := range ps {
		d := &ds[i]
		d.ip = pcap.Network(ps[i].LinkType, ps[i].Data)
		p := &d.p
		p.hashed = false
		d.ok = d.ip != nil && decodeIP(d.ip, p)
		if !d.ok || p.fragment || (p.proto != 6 && p.proto != 17) || len(p.l4) < 4 {
			continue
		}
		ports := binary.BigEndian.Uint32(p.l4)
		sig := [3]uint64{p.src[0] ^ p.dst[0], p.src[1] ^ p.dst[1], uint64(ports>>16^ports&0xffff) | uint64(p.proto)<<16}
		if sig == prev {
			continue
		}
		prev = sig
		sport, dport := uint16(ports>>16), uint16(ports)
		p.srcLo = less(p.src, p.dst) || (p.src == p.dst && sport <= dport)
		k := &p.key
		k.proto = p.proto
		if p.srcLo {
			k.lo, k.hi, k.loPort, k.hiPort = p.src, p.dst, sport, dport
		} else {
			k.lo, k.hi, k.loPort, k.hiPort = p.dst, p.src, dport, sport
		}
		p.hash, p.hashed = t.hash(k), true
		prefetch(unsafe.Pointer(&t.slots[p.hash&mask]), 1)
		runs[nr] = p
		nr++
	}
	for _, p := range runs[:nr] {
		if f := t.peek(p.hash); f != nil {
			prefetch(unsafe.Pointer(f), unsafe.Sizeof(flow{}))
		}
	}
	for _, p := range runs[:nr] {
		f := t.peek(p.hash)
		switch {
		case f == nil:
		case f.tcp != nil:
			prefetch(unsafe.Pointer(f.tcp), unsafe.Sizeof(tcpConn{}))
		case f.quic != nil:
			prefetch(unsafe.Pointer(f.quic), unsafe.Sizeof(quicConn{}))
		}
	}
}
