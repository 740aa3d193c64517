package passive

import (
	"encoding/binary"
	"unsafe"

	"github.com/sonde-project/sonde/internal/pcap"
	"github.com/sonde-project/sonde/internal/prefetch"
)

// batchLen is how many packets the reader reads at a time (fewer where
// its buffer is refilled): the span of the pipeline below.
const batchLen = 64

// aheadStep is the distance, in packets, between the pipeline's stages:
// the analysis of aheadStep packets (~0.5 µs) covers a memory latency.
const aheadStep = 3

// decoded is a packet decoded ahead of its analysis (frameOf).
type decoded struct {
	ip []byte // pcap.Network's
	p  ipPacket
	ok bool // decodeIP's
}

// readAhead holds the packets of a source read together and their
// decoded forms.
type readAhead struct {
	ps  [batchLen]pcap.Packet
	ds  [batchLen]decoded
	sig [3]uint64 // the last packet's flow signature (decodeAhead)
	// shard 0's packets of a batch split across workers, with the scans
	// due before them (readShards)
	zero [2 * batchLen]aheadPkt
}

// readBatched analyses the rest of one source (its current packet and
// every one after it) when no other source is open or due, in a software
// pipeline. Between one train of a flow and the next the analyser sees
// thousands of other flows, so a flow's state is out of the cache when
// its packet comes; one packet at a time, the lookup waited a full memory
// latency for the table slot, then for the flow, then for its state, then
// for the ring entries and summary buffers the state points to, each
// load depending on the one before. Here packet i+4·aheadStep is decoded
// and its table slot prefetched while packet i is analysed, the flow of
// packet i+3·aheadStep is prefetched (its slot is in the cache by then),
// the state of packet i+2·aheadStep, and the buffers of packet
// i+aheadStep's state: each load has the analysis of aheadStep packets
// to arrive. The order of analysis, and so every figure, is that of
// frame one packet at a time: the prefetches are hints, and a flow that
// changes in between (created, evicted, its table grown) only makes one
// useless.
func (a *Analyzer) readBatched(s *source) {
	a.frame(s)
	if a.ahead == nil {
		a.ahead = new(readAhead)
	}
	b := a.ahead
	b.sig = [3]uint64{}
	const d = aheadStep
	for {
		n := s.nextBatch(b.ps[:])
		if n == 0 {
			return
		}
		for i := -4 * d; i < n; i++ {
			if j := i + 4*d; j < n {
				a.decodeAhead(b, j)
			}
			if j := i + 3*d; j >= 0 && j < n && b.ds[j].p.hashed {
				if f := a.flows.peek(b.ds[j].p.hash); f != nil {
					prefetch.Lines(unsafe.Pointer(f), unsafe.Sizeof(flow{}))
				}
			}
			if j := i + 2*d; j >= 0 && j < n && b.ds[j].p.hashed {
				if f := a.flows.peek(b.ds[j].p.hash); f != nil {
					switch {
					case f.tcp != nil:
						prefetch.Lines(unsafe.Pointer(f.tcp), unsafe.Sizeof(tcpConn{}))
					case f.quic != nil:
						prefetch.Lines(unsafe.Pointer(f.quic), unsafe.Sizeof(quicConn{}))
					}
				}
			}
			if j := i + d; j >= 0 && j < n && b.ds[j].p.hashed {
				if f := a.flows.peek(b.ds[j].p.hash); f != nil {
					warmAhead(f)
				}
			}
			if i >= 0 {
				a.frameOf(s, &b.ps[i], &b.ds[i])
			}
		}
	}
}

// decodeAhead decodes packet j of the batch and, if it starts a run of
// its flow, keys and hashes it (the key, side and hash are kept for its
// lookup) and prefetches its table slot. The packets of a run take the
// previous packet's flow (Analyzer.lastFlow). A run is told by a cheap
// signature, the same in both directions; a collision only leaves a
// packet to be hashed by its lookup.
func (a *Analyzer) decodeAhead(b *readAhead, j int) {
	d := &b.ds[j]
	d.ip = pcap.Network(b.ps[j].LinkType, b.ps[j].Data)
	p := &d.p
	// The slot is reused: fragment is what Analyzer.packet reads of a
	// packet decodeIP refuses, which may return before setting it.
	p.hashed, p.fragment = false, false
	d.ok = d.ip != nil && decodeIP(d.ip, p)
	if !d.ok || p.fragment || (p.proto != 6 && p.proto != 17) || len(p.l4) < 4 {
		return
	}
	if !keyRun(p, &b.sig, a.flows) {
		return
	}
	t := a.flows
	prefetch.Lines(unsafe.Pointer(&t.slots[p.hash&uint64(len(t.slots)-1)]), 1)
}

// keyRun keys and hashes (with t's seed) a TCP or UDP packet p if it
// starts a run of its flow, told by sig (the previous packet's
// signature, updated), and reports whether it did.
func keyRun(p *ipPacket, sig *[3]uint64, t *flowTable) bool {
	ports := binary.BigEndian.Uint32(p.l4)
	s := [3]uint64{p.src[0] ^ p.dst[0], p.src[1] ^ p.dst[1], uint64(ports>>16^ports&0xffff) | uint64(p.proto)<<16}
	if s == *sig {
		return false
	}
	*sig = s
	keyOf(p, ports)
	p.hash, p.hashed = t.hash(&p.key), true
	return true
}

// keyOf sets p's flow key and side from its addresses and ports (the
// first four bytes of a TCP or UDP header).
func keyOf(p *ipPacket, ports uint32) {
	sport, dport := uint16(ports>>16), uint16(ports)
	p.srcLo = less(p.src, p.dst) || (p.src == p.dst && sport <= dport)
	k := &p.key
	k.proto = p.proto
	if p.srcLo {
		k.lo, k.hi, k.loPort, k.hiPort = p.src, p.dst, sport, dport
	} else {
		k.lo, k.hi, k.loPort, k.hiPort = p.dst, p.src, dport, sport
	}
}

// aheadPkt is one entry of a shard's stream decoded ahead of its
// analysis (shard.go): a packet, or a scan for idle flows at t.
type aheadPkt struct {
	t    int64
	mark bool // scan for idle flows at t
	d    decoded
}

// analyseAhead analyses a shard's decoded stream in readBatched's
// pipeline: the table slot of packet i+4·aheadStep, the flow of
// i+3·aheadStep, the state of i+2·aheadStep and the buffers of
// i+aheadStep are prefetched while packet i is analysed (the packets
// that start a run of their flow, hashed when decoded). The order of
// analysis, and so every figure, is the stream's.
func (a *Analyzer) analyseAhead(ps []aheadPkt) {
	const d = aheadStep
	n := len(ps)
	t := a.flows
	for i := -4 * d; i < n; i++ {
		if j := i + 4*d; j < n && ps[j].d.p.hashed {
			prefetch.Lines(unsafe.Pointer(&t.slots[ps[j].d.p.hash&uint64(len(t.slots)-1)]), 1)
		}
		if j := i + 3*d; j >= 0 && j < n && ps[j].d.p.hashed {
			if f := t.peek(ps[j].d.p.hash); f != nil {
				prefetch.Lines(unsafe.Pointer(f), unsafe.Sizeof(flow{}))
			}
		}
		if j := i + 2*d; j >= 0 && j < n && ps[j].d.p.hashed {
			if f := t.peek(ps[j].d.p.hash); f != nil {
				switch {
				case f.tcp != nil:
					prefetch.Lines(unsafe.Pointer(f.tcp), unsafe.Sizeof(tcpConn{}))
				case f.quic != nil:
					prefetch.Lines(unsafe.Pointer(f.quic), unsafe.Sizeof(quicConn{}))
				}
			}
		}
		if j := i + d; j >= 0 && j < n && ps[j].d.p.hashed {
			if f := t.peek(ps[j].d.p.hash); f != nil {
				warmAhead(f)
			}
		}
		if i >= 0 {
			e := &ps[i]
			if e.mark {
				a.evict(e.t)
			} else {
				a.packet(e.t, e.d.ip, &e.d.p, e.d.ok)
			}
		}
	}
}
