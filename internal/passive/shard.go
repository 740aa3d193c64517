package passive

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"sync/atomic"
	"time"
)

// Parallel analysis (Config.Workers > 1). The Analyzer that reads the
// files is the dispatcher: it decodes each packet's IP header, sends the
// packet to the shard its flow hashes to (shard 0 it analyses itself, in
// its own goroutine) (a symmetric hash: both
// directions of a connection reach the same shard, so every flow lives in
// one shard's table), and keeps the capture clock. The shards are
// Analyzers of their own, each in a goroutine, that never run their own
// clock: the dispatcher puts "scan for idle flows at t" in every shard's
// stream at the place one analyser would have scanned, so every flow is
// evicted, and every straggler after a close is judged, at the same
// capture time as with one worker. At the end the shards' records and
// counters are summed into the dispatcher's analysis, whose order is the
// records' (start, ends): the figures are those of one worker. What may
// differ: peak_live_flows (the sum of the shards' peaks), the order of
// --ndjson lines and of the records' notes across shards, and behaviour
// past the bounds that are per shard (MaxFlows, the after-close and QUIC
// candidate tables, the per-port UDP note's 64 ports).

// shard is one worker: an Analyzer fed by batches.
type shard struct {
	a    *Analyzer
	cur  *batch      // being filled by the dispatcher
	work chan *batch // to the worker
	free chan *batch // back from it
	// The signature of the last packet's flow (keyRun).
	sig  [3]uint64
	ring *ringLease // the reader's buffers, when they are leased
	// finishLive: the worker finishes its live flows itself once its
	// batches are analysed (no --ndjson: their order matters to none).
	finishLive bool
}

// batch carries packets and scan marks to a shard, in capture order,
// with the IP headers the dispatcher decoded (the worker does not decode
// them again): packets copied into buf (dispatch: the caller reuses its
// buffer), or left in the reader's buffers, which the batch then holds
// (leases).
type batch struct {
	first  int64 // the dispatcher's first packet time (the clock's origin)
	ents   []aheadPkt
	buf    []byte
	leases []*leased
}

const (
	batchPackets = 512
	// shardBatches bounds each shard's batches (in flight and free): the
	// memory of the queues is fixed. 16, not 4: with 4 the reader and the
	// worker waited on each other (two workers 0.91 against 1.01 s wall
	// on the 10 M capture, medians of the fast runs of 7 alternated,
	// docs/analyze.md); 64 with 80 buffers was far slower (1.6-2.2 s).
	shardBatches = 16
	// ringBuffers is how many buffers the reader of a file split across
	// workers reads into (ringLease): enough for every worker's batches
	// in flight (shardBatches of batchPackets, ~60 KiB each) and the
	// one being read, so that the reader does not wait on them.
	ringBuffers = 32
	ringBytes   = 256 << 10
)

// leased is one of the reader's buffers lent to the workers: free again
// once the reader has left it and every batch that holds it has been
// analysed.
type leased struct {
	b    []byte
	refs atomic.Int32 // the reader's (until it leaves it) and the batches'
}

// ringLease gives a file's pcap.Reader its buffers (pcap.Lease) when
// the file is split across workers, so that the other shards' packets
// go to them without a copy: each batch holds the buffers its packets
// lie in, and a buffer is read into again only once they are analysed.
type ringLease struct {
	a         *Analyzer
	size      int
	free      chan *leased
	cur, next *leased // the reader's buffer (nil: not leased), and Get's until Put
	// poison overwrites each buffer as it is freed (tests: a packet
	// read after its buffer was freed then has other figures).
	poison bool
}

func newRingLease(a *Analyzer, n, size int) *ringLease {
	r := &ringLease{a: a, size: size, free: make(chan *leased, n)}
	for range n {
		r.free <- &leased{b: make([]byte, size)}
	}
	return r
}

func (r *ringLease) Size() int { return r.size }

// Get flushes the batches being filled first: they hold the buffers the
// reader leaves, and waiting for a free one while they stay here would
// wait forever.
func (r *ringLease) Get() []byte {
	for _, s := range r.a.shards {
		s.flush()
	}
	e := <-r.free
	e.refs.Store(1)
	r.next = e
	return e.b
}

func (r *ringLease) Put([]byte) {
	r.release(r.cur)
	r.cur, r.next = r.next, nil
}

// release drops one hold on e (nil: not leased), freeing it at the last.
func (r *ringLease) release(e *leased) {
	if e == nil || e.refs.Add(-1) > 0 {
		return
	}
	if r.poison {
		for i := range e.b {
			e.b[i] = 0xa5
		}
	}
	r.free <- e
}

func (a *Analyzer) startShards(n int) {
	// Shards finish flows concurrently: one record at a time.
	cfg := serialised(a.cfg)
	cfg.Workers = 0
	cfg.MaxFlows = max(a.cfg.MaxFlows/n, 1)
	cfg.Spill = false // the dispatcher's, shared (it locks)
	for i := range n {
		s := &shard{a: New(cfg)}
		s.a.shard = true
		s.a.spill = a.spill
		a.shards = append(a.shards, s)
		if i == 0 {
			// The reading goroutine analyses shard 0 itself, without a
			// copy or a hand-over: n workers are n goroutines.
			continue
		}
		s.work, s.free = make(chan *batch, shardBatches), make(chan *batch, shardBatches)
		s.finishLive = a.cfg.OnRecord == nil
		for range shardBatches {
			s.free <- &batch{ents: make([]aheadPkt, 0, batchPackets), buf: make([]byte, 0, batchPackets*160)}
		}
		go s.run()
	}
}

// run analyses batches until the work channel closes, batchLen packets
// at a time in analyseAhead's pipeline: the packets come decoded, and
// those that start a run of their flow in this worker's stream are keyed
// and hashed (with its table's seed) here.
func (s *shard) run() {
	a := s.a
	for b := range s.work {
		a.first, a.started = b.first, true
		for k := 0; k < len(b.ents); k += batchLen {
			ps := b.ents[k:min(len(b.ents), k+batchLen)]
			for i := range ps {
				q := &ps[i]
				if q.mark {
					continue
				}
				p := &q.d.p
				q.d.ok, p.fragment, p.hashed = true, false, false
				if (p.proto == 6 || p.proto == 17) && len(p.l4) >= 4 {
					keyRun(p, &s.sig, a.flows)
				}
			}
			a.analyseAhead(ps)
		}
		// The entries are not cleared: what they point to is the
		// reader's ring or this batch's buf, which live on anyway
		// (a buffer outside the ring is held until they are
		// overwritten: a bounded few).
		b.ents, b.buf = b.ents[:0], b.buf[:0]
		for _, e := range b.leases {
			s.ring.release(e)
		}
		clear(b.leases)
		b.leases = b.leases[:0]
		s.free <- b
	}
	if s.finishLive {
		a.lastFlow = nil
		a.finishAll(a.flows.flows())
	}
	s.free <- nil // done
}

// readShards reads the rest of one source (its current packet and every
// one after it) and splits it across the shards, when no other source
// is open or due: batchLen packets at a time (pcap.Reader.NextBatch),
// each decoded once, the other shards' left in the reader's buffers
// (ringLease, not copied) and added to their batches, and shard 0's
// analysed in place by analyseAhead's pipeline once the batch is split. A run of one flow's packets is routed (and hashed) once: its
// later packets have the same addresses, ports and protocol, compared
// whole, either way.
func (a *Analyzer) readShards(s *source) {
	a.frame(s)
	if a.ahead == nil {
		a.ahead = new(readAhead)
	}
	b := a.ahead
	s0 := a.shards[0].a
	if a.ring == nil {
		a.ring = newRingLease(a, ringBuffers, ringBytes)
	}
	ring := a.ring
	for _, sh := range a.shards {
		sh.ring = ring
	}
	s.rd.SetLease(ring)
	var (
		// The last routed packet's addresses, ports and protocol,
		// and its shard (-1: none yet).
		runSrc, runDst [2]uint64
		runPorts       uint32
		runProto       uint8
		runTo          = -1
	)
	for {
		n := s.nextBatch(b.ps[:])
		if n == 0 {
			return
		}
		zero := b.zero[:0]
		for i := range b.ps[:n] {
			p := &b.ps[i]
			ip, ok := a.admit(s, p, nil)
			if !ok {
				continue
			}
			if ip == nil {
				a.res.Packets++
				a.res.Skipped++
				continue
			}
			// The slot is not cleared: decodeIP sets every field
			// the analysis reads of a packet it accepts (the key,
			// side and hash only when hashed), and fragment is all
			// that of one it refuses.
			zero = zero[:len(zero)+1]
			q := &zero[len(zero)-1]
			q.t, q.mark = p.TimeNs, false
			d := &q.d
			d.ip = ip
			pp := &d.p
			pp.hashed, pp.fragment = false, false
			d.ok = decodeIP(ip, pp)
			if !d.ok || pp.fragment {
				continue // shard 0 counts it
			}
			if a.tick(q.t) {
				// The scan goes before the packet in every stream.
				for _, sh := range a.shards[1:] {
					sh.add(a.first, q.t, nil)
				}
				zero = append(zero, *q)
				zero[len(zero)-2] = aheadPkt{t: q.t, mark: true}
				q = &zero[len(zero)-1]
				pp = &q.d.p
			}
			to := 0
			if (pp.proto == 6 || pp.proto == 17) && len(pp.l4) >= 4 {
				ports := binary.BigEndian.Uint32(pp.l4)
				same := pp.proto == runProto && (pp.src == runSrc && pp.dst == runDst && ports == runPorts ||
					pp.src == runDst && pp.dst == runSrc && ports == runPorts<<16|runPorts>>16)
				if !same || runTo < 0 {
					runSrc, runDst, runPorts, runProto = pp.src, pp.dst, ports, pp.proto
					runTo = shardOf(flowHash(pp), len(a.shards))
					if runTo == 0 {
						keyOf(pp, ports)
						pp.hash, pp.hashed = s0.flows.hash(&pp.key), true
					}
				}
				to = runTo
			} else {
				to = shardOf(flowHash(pp), len(a.shards))
			}
			if to != 0 {
				zero = zero[:len(zero)-1]
				a.shards[to].addLeased(a.first, q, ring)
			}
		}
		s0.first, s0.started = a.first, true
		s0.analyseAhead(zero)
	}
}

// dispatch sends one IP packet (nil: not IP) to its shard.
func (a *Analyzer) dispatch(t int64, ip []byte) {
	if ip == nil {
		// Not IP: counted here, as Packet would (the reason by the
		// caller, which knows the link).
		a.res.Packets++
		a.res.Skipped++
		return
	}
	var p ipPacket
	var h uint64 // malformed and fragments: shard 0 counts them
	ok := decodeIP(ip, &p)
	if ok && !p.fragment {
		if a.tick(t) {
			for _, s := range a.shards {
				s.add(a.first, t, nil)
			}
		}
		h = flowHash(&p)
	}
	s := a.shards[shardOf(h, len(a.shards))]
	if s.work == nil {
		// Shard 0: analysed here, from the header just decoded.
		s.a.first, s.a.started = a.first, true
		s.a.packet(t, ip, &p, ok)
		return
	}
	s.add(a.first, t, ip)
}

// add appends a packet (nil ip: a scan mark) to the shard's batch and
// hands the batch over when full; shard 0's is analysed at once.
func (s *shard) add(first, t int64, ip []byte) {
	if s.work == nil {
		s.a.first, s.a.started = first, true
		if ip == nil {
			s.a.evict(t)
		} else {
			s.a.Packet(t, ip)
		}
		return
	}
	b := s.batch(first)
	if ip == nil {
		b.ents = append(b.ents, aheadPkt{t: t, mark: true})
	} else {
		off := len(b.buf)
		b.buf = append(b.buf, ip...)
		b.ents = append(b.ents, aheadPkt{t: t})
		d := &b.ents[len(b.ents)-1].d
		d.ip = b.buf[off:len(b.buf):len(b.buf)]
		d.ok = decodeIP(d.ip, &d.p)
	}
	s.sendFull(b)
}

// addLeased appends a decoded packet (not hashed) that lies in the
// reader's buffer r.cur (nil: a buffer that is not reused) to the
// shard's batch, which holds the buffer until the packet is analysed.
func (s *shard) addLeased(first int64, q *aheadPkt, r *ringLease) {
	b := s.batch(first)
	if e := r.cur; e != nil && (len(b.leases) == 0 || b.leases[len(b.leases)-1] != e) {
		e.refs.Add(1)
		b.leases = append(b.leases, e)
	}
	// Only what decodeIP set: the worker keys its runs itself, and
	// every packet of its batches is whole IP (the others are shard
	// 0's), which it marks so (run): fewer of the batch's cache lines
	// written here and read there.
	b.ents = b.ents[:len(b.ents)+1]
	e := &b.ents[len(b.ents)-1]
	e.t, e.mark, e.d.ip = q.t, false, q.d.ip
	p, ep := &q.d.p, &e.d.p
	ep.v6, ep.src, ep.dst, ep.proto, ep.length, ep.l4, ep.l4Len = p.v6, p.src, p.dst, p.proto, p.length, p.l4, p.l4Len
	s.sendFull(b)
}

// batch returns the batch being filled (a free one if none).
func (s *shard) batch(first int64) *batch {
	if s.cur == nil {
		s.cur = <-s.free
	}
	s.cur.first = first
	return s.cur
}

// sendFull hands b over when it is full.
func (s *shard) sendFull(b *batch) {
	if len(b.ents) == cap(b.ents) || len(b.buf) > 1<<20 {
		s.work <- b
		s.cur = nil
	}
}

// flush hands over the batch being filled, if any.
func (s *shard) flush() {
	if s.cur != nil && len(s.cur.ents) > 0 {
		s.work <- s.cur
		s.cur = nil
	}
}

// flowHash is the same for both directions of a flow: the sum of a hash
// of each end (address and port).
func flowHash(p *ipPacket) uint64 {
	var sport, dport uint64
	if (p.proto == 6 || p.proto == 17) && len(p.l4) >= 4 {
		sport = uint64(p.l4[0])<<8 | uint64(p.l4[1])
		dport = uint64(p.l4[2])<<8 | uint64(p.l4[3])
	}
	h := endHash(p.src[0], p.src[1]^sport<<48) + endHash(p.dst[0], p.dst[1]^dport<<48) + uint64(p.proto)
	h ^= h >> 31
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>29
}

func endHash(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db)
	return hi ^ lo
}

// shardOf maps a flow hash to one of n shards. Shard 0, which the reading
// goroutine analyses beside its reading, gets a smaller share, so that
// the goroutines finish together: the reader's own work (reading,
// decoding, routing, copying the other shards' packets) is O per packet
// and the analysis A, so shard 0's share that equalises them is
// x0 = 1/n - (n-1)/n × O/A. Two workers, both analysing in readShards'
// pipeline (CPU profiles of BenchmarkJobFile on the bench's 10 M
// capture, load 2.5-3.4): with shard 0 given 1/3 of the flows, 0.85-1.02
// CPU s in the reader's goroutine against 0.96-1.15 in the other
// worker's; with 2/5, 0.97-1.08 against 0.90-1.03; the other shards'
// packets no longer copied (ringLease), with 3/8 0.84-1.06 against
// 0.88-1.07, with 2/5 1.06-1.15 against 0.78-1.03; with 7/20 against
// 3/8, ten alternated pairs (load 3.0-3.4), the two-core bound (serial
// + the busier goroutine) 0.99 against 1.02 s on average, lower in 8 of
// 10. Two workers: 7 units against the other's 13 (x0 = 7/20). Three: 1 unit against 10 each
// (O/A = 0.43, measured before the pipeline, gives x0 = 0.05); past
// that the reader is the bottleneck whatever it analyses (1 unit).
func shardOf(h uint64, n int) int {
	u0, u := uint64(1), uint64(10)
	if n == 2 {
		u0, u = 7, 13
	}
	k, _ := bits.Mul64(h, u0+u*uint64(n-1))
	if k < u0 {
		return 0
	}
	return 1 + int((k-u0)/u)
}

// mergeShards waits for the shards, finishes their live flows and adds
// their records and counters to a's analysis.
func (a *Analyzer) mergeShards() {
	start := time.Now()
	for _, s := range a.shards {
		if s.work == nil {
			continue
		}
		s.flush()
		s.cur = nil
		close(s.work)
	}
	if a.cfg.OnRecord == nil {
		// The records' order is the spill's or byStart's: the
		// workers finish their live flows as the reader does shard
		// 0's.
		for _, s := range a.shards {
			if s.work == nil {
				s.a.lastFlow = nil
				s.a.finishAll(s.a.flows.flows())
			}
		}
	}
	for _, s := range a.shards {
		if s.work == nil {
			continue
		}
		for b := range s.free {
			if b == nil {
				break
			}
		}
	}
	a.wall += time.Since(start)
	// The flows still live (with --ndjson) finish in one order across
	// the shards, the one a single analyser gives them (its last lines).
	type owned struct {
		f *flow
		a *Analyzer
	}
	var live []owned
	for _, s := range a.shards {
		for _, f := range s.a.flows.flows() {
			live = append(live, owned{f, s.a})
		}
	}
	slices.SortFunc(live, func(x, y owned) int { return cmp.Or(cmp.Compare(x.f.first, y.f.first), x.f.key.compare(&y.f.key)) })
	for _, o := range live {
		o.a.finish(o.f)
	}
	r := &a.res
	for _, s := range a.shards {
		w := s.a
		wr := &w.res
		r.Packets += wr.Packets
		r.Bytes += wr.Bytes
		r.Skipped += wr.Skipped
		r.TCP = append(r.TCP, wr.TCP...)
		r.QUIC = append(r.QUIC, wr.QUIC...)
		// A record's notes (a goodput series in coarser bins) are
		// its worker's: in the workers' order, then finishing order.
		r.Notes = append(r.Notes, wr.Notes...)
		r.Stats.EvictedFlows += wr.Stats.EvictedFlows
		r.Stats.TruncatedFlows += wr.Stats.TruncatedFlows
		r.Stats.AfterClose += wr.Stats.AfterClose
		a.nTCP += w.nTCP
		a.nQUIC += w.nQUIC
		a.peak += w.peak
		a.skip.add(&w.skip)
	}
	a.shards = nil
}

// add sums o's counts into s.
func (s *skips) add(o *skips) {
	for k, n := range o.link {
		bump(s.link, k, n)
	}
	s.notIP += o.notIP
	s.malformed += o.malformed
	s.fragments += o.fragments
	for i, n := range o.proto {
		s.proto[i] += n
	}
	s.udp += o.udp
	for k, n := range o.udpPorts {
		bump(s.udpPorts, k, n)
	}
	for _, m := range [2][2]map[string]*quicSkip{{s.quic, o.quic}, {s.invariant, o.invariant}} {
		for k, q := range m[1] {
			if p := m[0][k]; p != nil {
				p.flows += q.flows
				p.packets += q.packets
			} else if len(m[0]) < maxSkipKeys {
				c := *q
				m[0][k] = &c
			}
		}
	}
}
