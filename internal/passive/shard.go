package passive

import (
	"cmp"
	"math/bits"
	"slices"
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
// --ndjson lines across shards, and behaviour past the bounds that are
// per shard (MaxFlows, the after-close and QUIC candidate tables, the
// per-port UDP note's 64 ports).

// shard is one worker: an Analyzer fed by batches.
type shard struct {
	a    *Analyzer
	cur  *batch      // being filled by the dispatcher
	work chan *batch // to the worker
	free chan *batch // back from it
}

// batch carries packets (copied: the reader reuses its buffer) and scan
// marks to a shard, in capture order.
type batch struct {
	first int64 // the dispatcher's first packet time (the clock's origin)
	ents  []entry
	buf   []byte
}

type entry struct {
	t   int64
	off int32
	n   int32 // -1: scan for idle flows at t
}

const (
	batchPackets = 512
	// shardBatches bounds each shard's batches (in flight and free): the
	// memory of the queues is fixed.
	shardBatches = 4
)

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
		for range shardBatches {
			s.free <- &batch{ents: make([]entry, 0, batchPackets), buf: make([]byte, 0, batchPackets*160)}
		}
		go s.run()
	}
}

// run analyses batches until the work channel closes.
func (s *shard) run() {
	a := s.a
	for b := range s.work {
		a.first, a.started = b.first, true
		for _, e := range b.ents {
			if e.n < 0 {
				a.evict(e.t)
				continue
			}
			a.Packet(e.t, b.buf[e.off:e.off+e.n])
		}
		b.ents, b.buf = b.ents[:0], b.buf[:0]
		s.free <- b
	}
	s.free <- nil // done
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
	if s.cur == nil {
		s.cur = <-s.free
	}
	b := s.cur
	b.first = first
	if ip == nil {
		b.ents = append(b.ents, entry{t: t, n: -1})
	} else {
		b.ents = append(b.ents, entry{t: t, off: int32(len(b.buf)), n: int32(len(ip))})
		b.buf = append(b.buf, ip...)
	}
	if len(b.ents) == cap(b.ents) || len(b.buf) > 1<<20 {
		s.work <- b
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
// decoding, hashing, copying the other shards' packets) is O per packet
// and the analysis A, so shard 0's share that equalises them is
// x0 = 1/n - (n-1)/n × O/A. CPU profiles of two workers on the bench's
// 10 M capture (BenchmarkJobFile, load 4-10): with shard 0 given 2/5 of
// the flows, 1.32 s in the reader's goroutine (0.62 s of it shard 0's
// analysis) and 1.00 s in the other worker's (O/A = 0.43, x0 = 0.28);
// with 2/7, 0.95, 1.06 and 0.81 s against 1.07, 1.32 and 1.37 s
// (x0 = 0.37 from their means). Two workers: 5 units against the
// other's 10 (x0 = 1/3). Three: 1 unit against 10 each (O/A = 0.43
// gives x0 = 0.05); past that the reader is the bottleneck whatever it
// analyses (1 unit).
func shardOf(h uint64, n int) int {
	u0 := uint64(1)
	if n == 2 {
		u0 = 5
	}
	k, _ := bits.Mul64(h, u0+10*uint64(n-1))
	if k < u0 {
		return 0
	}
	return 1 + int((k-u0)/10)
}

// mergeShards waits for the shards, finishes their live flows and adds
// their records and counters to a's analysis.
func (a *Analyzer) mergeShards() {
	start := time.Now()
	for _, s := range a.shards {
		if s.work == nil {
			continue
		}
		if s.cur != nil && len(s.cur.ents) > 0 {
			s.work <- s.cur
		}
		s.cur = nil
		close(s.work)
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
	// The flows still live finish in one order across the shards, the
	// one a single analyser gives them (--ndjson's last lines).
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
