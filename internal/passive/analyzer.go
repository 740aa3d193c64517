// Package passive is sonde's capture analyser (`sonde analyze`): it sorts
// packets into TCP connections and QUIC flows, keeps per-connection
// counters (tcptrace-like), runs the passive RTT estimators (tcprtt,
// spinbit) and compares their samples with the emulator's per-packet ground
// truth. The per-packet path parses in place and looks flows up in a map
// keyed by a fixed-size struct: it allocates only when a flow is created or
// one of its rings or sample lists grows.
package passive

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive/http1"
	"github.com/sonde-project/sonde/internal/pcap"
)

// Config tunes an Analyzer.
type Config struct {
	// Interval is the bin of goodput series (default 1 s).
	Interval time.Duration
	// IdleTimeout evicts a flow that saw no packet for this long in
	// capture time (default 120 s; closed TCP connections after 10 s).
	IdleTimeout time.Duration
	// MaxFlows bounds live flows; packets of further flows are counted but
	// not analysed (default 1<<20).
	MaxFlows int
	// Interface keeps only packets of this pcapng interface (-1: all).
	// A lab capture holds every packet twice, once per link end: pick one.
	Interface int
	// Identity computes each packet's ground-truth identity hash
	// (emulator.PacketIdentity); needed for truth comparison.
	Identity bool
	// QUICPorts are UDP ports whose traffic is taken as QUIC even when the
	// handshake was not captured (default 443).
	QUICPorts []uint16
	// KeepSamples keeps every RTT sample for the whole run (Samples, the
	// truth comparison, per-sample outputs and plots). Without it each
	// flow keeps running statistics per method (count, mean, min, max and
	// a bounded quantile sketch) and memory follows the live flows.
	KeepSamples bool
	// TimeSequence keeps a bounded time-sequence record per TCP
	// connection (model.TCPConn.TimeSeq) for the HTML report.
	TimeSequence bool
	// Filter selects the packets of files that are analysed (nil: all).
	// Packets that are not IP never match.
	Filter *capfilter.Filter
	// OnRecord, if set, receives each flow's record as the flow finishes
	// (closed and lingered, idle, or at the end of the analysis), in the
	// order they finish: a streaming output (sonde analyze --ndjson).
	OnRecord func(Record)
	// Workers analyse the packets of files in parallel, split by a
	// symmetric hash of their flow (both directions to the same worker);
	// the figures are those of one worker (shard.go). 0 or 1: one, in the
	// caller's goroutine. Per-sample outputs (KeepSamples, Identity) use
	// one.
	Workers int
	// DropRecords keeps no finished record (Analysis.TCP, QUIC and
	// HTTPPages stay empty; Records counts them): with OnRecord, memory
	// then follows the live flows only, whatever the capture's length.
	DropRecords bool
	// Spill keeps the finished records (for Analysis.TCP and QUIC) in a
	// temporary file in SpillDir (default: the system's) once there are
	// more than a few thousand, and returns them as Analysis.Spill:
	// memory then follows the live flows whatever the capture's length
	// (spill.go). Call Close to remove the file.
	Spill    bool
	SpillDir string
	// OnSpill, if set, is called with each record Spill keeps, one at a
	// time, as it is kept: an output sized as the records finish
	// (report.TextColumns) reads them back once instead of twice. It must
	// not keep the record.
	OnSpill func(Record)
	// OnSample, if set, receives every RTT sample (sonde analyze
	// --samples FILE), where the per-flow summaries keep quantiles within
	// 0.8 % (rttstats.go): TCP samples as they are taken, in bounded
	// memory; a QUIC flow's spin samples when it finishes (a flow found
	// not to spin voids them all), held until then as with KeepSamples.
	// With several workers, calls are one at a time and the flows'
	// samples interleave in another order.
	OnSample func(model.PassiveRTT)
}

// Record is one finished flow: a TCP connection or a QUIC flow.
type Record struct {
	TCP  *model.TCPConn  `json:"tcp,omitempty"`
	QUIC *model.QUICConn `json:"quic,omitempty"`
}

// flowKey identifies a flow whichever way its packets travel: the lower
// address (and its port) first. Addresses are big-endian words, so that
// comparing keys is a few word compares rather than a byte loop.
type flowKey struct {
	lo, hi         [2]uint64
	loPort, hiPort uint16
	proto          uint8
}

func less(a, b [2]uint64) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

func (k *flowKey) compare(o *flowKey) int {
	return cmp.Or(cmp.Compare(k.lo[0], o.lo[0]), cmp.Compare(k.lo[1], o.lo[1]), cmp.Compare(k.hi[0], o.hi[0]),
		cmp.Compare(k.hi[1], o.hi[1]), cmp.Compare(k.loPort, o.loPort), cmp.Compare(k.hiPort, o.hiPort), cmp.Compare(k.proto, o.proto))
}

func (k *flowKey) equal(o *flowKey) bool {
	return k.lo == o.lo && k.hi == o.hi && k.loPort == o.loPort && k.hiPort == o.hiPort && k.proto == o.proto
}

type flow struct {
	key   flowKey
	hash  uint64 // of key, in Analyzer.flows
	index int    // in Analyzer.names
	name  string // "A > B", once a sample is streamed (Config.OnSample)
	aIsLo bool   // side A (client) is key.lo
	first int64
	last  int64
	tcp   *tcpConn
	quic  *quicConn
	// samples are this flow's RTT samples, moved to Analyzer.samples
	// when the flow finishes.
	samples []sample
}

// Analyzer consumes packets and builds a model.Analysis.
type Analyzer struct {
	cfg      Config
	flows    *flowTable
	dead     []*flow  // evict's scratch
	names    []string // flow names by index, "a > b"
	samples  []sample
	res      model.Analysis
	first    int64
	last     int64
	started  bool
	nextScan int64
	lastFlow *flow      // the flow of the previous packet (nil after eviction)
	warm     uint64     // what warm read (kept, so that the reads are not dropped)
	ahead    *readAhead // readBatched's
	peak     int
	wall     time.Duration
	skip     skips
	dups     dupFilter
	nTCP     int // records finished, kept or not
	nQUIC    int
	closed   closedKeys // TCP connections evicted after they closed
	cands    quicCands  // UDP flows that may be QUIC of an unknown version
	// shards analyse the packets when Config.Workers > 1 (shard.go);
	// shard marks an Analyzer that is one of them.
	shards []*shard
	shard  bool
	ring   *ringLease // the buffers of a file read by readShards
	// spill keeps the finished records (Config.Spill); the shards share
	// their dispatcher's.
	spill *recordSpill
}

// skips counts the packets that were not analysed, by reason, for the
// notes of the output. Its maps are bounded (maxSkipKeys entries each):
// a crafted file cannot grow them.
type skips struct {
	link      map[pcap.LinkType]uint64 // link types Network does not read
	notIP     uint64                   // a link layer carrying something else (ARP, LLDP)
	malformed uint64
	fragments uint64
	proto     [256]uint64      // IP protocols other than TCP and UDP
	udp       uint64           // UDP packets not taken as QUIC
	udpPorts  map[uint16]int64 // ... by their flow's lower port
	quic      map[string]*quicSkip
	// invariant counts the flows of unknown QUIC versions found by the
	// invariants, per version.
	invariant map[string]*quicSkip
}

// quicSkip counts the flows and packets of a QUIC version sonde does not
// analyse, and says why.
type quicSkip struct {
	flows, packets uint64
	why            string
}

const maxSkipKeys = 64

// bump adds n to m[k] unless m is full of other keys.
func bump[K comparable, V int64 | uint64](m map[K]V, k K, n V) {
	if _, ok := m[k]; ok || len(m) < maxSkipKeys {
		m[k] += n
	}
}

// New returns an Analyzer.
func New(cfg Config) *Analyzer {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 120 * time.Second
	}
	if cfg.MaxFlows <= 0 {
		cfg.MaxFlows = 1 << 20
	}
	if cfg.QUICPorts == nil {
		cfg.QUICPorts = []uint16{443}
	}
	a := &Analyzer{cfg: cfg, flows: newFlowTable(), res: model.Analysis{Schema: model.AnalyzeSchema, Filter: cfg.Filter.String()},
		skip: skips{link: map[pcap.LinkType]uint64{}, udpPorts: map[uint16]int64{}, quic: map[string]*quicSkip{}, invariant: map[string]*quicSkip{}}}
	if cfg.Spill && !cfg.DropRecords {
		a.spill = newRecordSpill(cfg.SpillDir)
		a.spill.on = cfg.OnSpill
	}
	if cfg.Workers > 1 && !cfg.KeepSamples && !cfg.Identity {
		a.startShards(cfg.Workers)
	}
	return a
}

// ReadFile analyses one capture file (plain, gzip or zstd). A damaged
// file is analysed up to the damage, which is recorded in the returned
// CaptureFile (and not returned as an error); err is for files that
// cannot be read at all.
func (a *Analyzer) ReadFile(path string) (model.CaptureFile, error) {
	cfs, errs := a.ReadFiles([]string{path})
	return cfs[0], errs[0]
}

// Read analyses a capture from r; cf names it.
func (a *Analyzer) Read(r io.Reader, cf model.CaptureFile) (model.CaptureFile, error) {
	start := time.Now()
	defer func() { a.wall += time.Since(start) }()
	src, err := newSource(r, nil, cf)
	if err != nil {
		return cf, err
	}
	for src.next() {
		a.frame(src)
	}
	a.endSource(src)
	return src.cf, src.err
}

// frame analyses the source's current packet.
func (a *Analyzer) frame(s *source) { a.frameOf(s, &s.p, nil) }

// frameOf analyses packet p of source s; d, if not nil, is p decoded
// ahead (readahead.go).
func (a *Analyzer) frameOf(s *source, p *pcap.Packet, d *decoded) {
	ip, ok := a.admit(s, p, d)
	if !ok {
		return
	}
	if a.shards != nil {
		a.dispatch(p.TimeNs, ip)
		return
	}
	if d != nil {
		a.packet(p.TimeNs, ip, &d.p, d.ok)
		return
	}
	a.Packet(p.TimeNs, ip)
}

// admit counts packet p of source s and returns its IP packet (nil: not
// IP, counted as skipped by why) with whether it is analysed: on the
// interface asked for, not a copy, and through the filter. d, if not
// nil, holds the IP packet found ahead.
func (a *Analyzer) admit(s *source, p *pcap.Packet, d *decoded) ([]byte, bool) {
	s.all++
	s.seen = max(s.seen, p.Interface)
	if a.cfg.Interface >= 0 && p.Interface != a.cfg.Interface {
		return nil, false
	}
	s.cf.Packets++
	var ip []byte
	if d != nil {
		ip = d.ip
	} else {
		ip = pcap.Network(p.LinkType, p.Data)
	}
	if ip == nil {
		if pcap.Supported(p.LinkType) {
			a.skip.notIP++
		} else {
			bump(a.skip.link, p.LinkType, 1)
		}
	}
	if ip != nil && a.dups.copyOf(p.LinkType, p.Data, ip, p.TimeNs) {
		return nil, false
	}
	if a.cfg.Filter != nil && !a.cfg.Filter.Match(ip) {
		a.res.Filtered++
		return nil, false
	}
	return ip, true
}

// endSource records a source read to its end (or its damage).
func (a *Analyzer) endSource(s *source) {
	cf := &s.cf
	if s.damage != nil {
		cf.DamageOffset, cf.Damage = s.damage.Offset, s.damage.Reason
		a.res.Errors = append(a.res.Errors, fmt.Sprintf("%s: %v", cf.Path, s.damage))
	}
	if s.rd != nil {
		for _, n := range s.rd.Notes() {
			a.res.Notes = append(a.res.Notes, cf.Path+": "+n)
		}
	}
	if a.cfg.Interface >= 0 && cf.Packets == 0 && s.all > 0 {
		// A wrong index selects nothing: say so rather than report an
		// empty analysis.
		a.res.Errors = append(a.res.Errors, fmt.Sprintf("%s: no packet on interface %d (--interface): the file's %d packets are on interfaces 0-%d",
			cf.Path, a.cfg.Interface, s.all, s.seen))
	}
	a.res.Files = append(a.res.Files, *cf)
}

// Feed analyses one IP packet (nil: not IP) captured at t (Unix ns) from
// any source (a live capture) as the packets of files are: split across
// the workers when Config.Workers > 1 (copied for another worker's
// goroutine: the caller may reuse ip once Feed returns), in the caller
// otherwise. Finish waits for the workers.
func (a *Analyzer) Feed(t int64, ip []byte) {
	if a.shards != nil {
		a.dispatch(t, ip)
		return
	}
	a.Packet(t, ip)
}

// Packet analyses one IP packet (nil: not IP) captured at t (Unix ns) in
// the caller's goroutine, whatever Config.Workers.
func (a *Analyzer) Packet(t int64, ip []byte) {
	var p ipPacket
	a.packet(t, ip, &p, ip != nil && decodeIP(ip, &p))
}

// packet analyses an IP packet that decodeIP decoded into p (ok: without
// error); the dispatcher of workers decodes each packet once for both.
func (a *Analyzer) packet(t int64, ip []byte, pp *ipPacket, ok bool) {
	a.res.Packets++
	p := pp
	if !ok || p.fragment {
		switch {
		case ip == nil: // counted by the caller, which knows the link
		case p.fragment:
			a.skip.fragments++
		default:
			a.skip.malformed++
		}
		a.res.Skipped++
		return
	}
	a.res.Bytes += uint64(p.length)
	if !a.shard && a.tick(t) {
		a.evict(t)
	}
	var id uint64
	if a.cfg.Identity {
		id = emulator.PacketIdentity(ip).Hash
	}
	switch p.proto {
	case 6:
		a.tcpPacket(t, p, id)
	case 17:
		a.udpPacket(t, p, id)
	default:
		a.skip.proto[p.proto]++
		a.res.Skipped++
	}
}

// tick advances the capture clock to t (a packet's time) and reports
// whether idle flows are due to be looked for. A shard's clock is its
// dispatcher's (shard.go): every shard scans at the same capture times
// as one analyser would.
func (a *Analyzer) tick(t int64) bool {
	if !a.started {
		a.first, a.started = t, true
		a.nextScan = t + a.scanEvery()
	}
	a.last = max(a.last, t)
	if t >= a.nextScan {
		a.nextScan = t + a.scanEvery()
		return true
	}
	return false
}

// lookup finds or creates the flow of a packet and returns it with the
// packet's direction (0: A→B). create decides the orientation of a new
// flow from the first packet: it returns whether the sender is side A, or
// ok=false to ignore the packet.
func (a *Analyzer) lookup(p *ipPacket, sport, dport uint16, t int64, create func(k *flowKey) (senderIsA, ok bool)) (*flow, uint8) {
	// Packets come in trains of one flow: a packet of the last flow is
	// told by comparing its addresses and ports with that flow's key
	// either way round, without building its own key (either way: the
	// first is the key's order, so that a flow whose two ends are the
	// same address and port takes side 0 as below).
	if f := a.lastFlow; f != nil && !p.hashed && f.key.proto == p.proto {
		k := &f.key
		srcLo, ok := true, k.lo == p.src && k.hi == p.dst && k.loPort == sport && k.hiPort == dport
		if !ok {
			srcLo, ok = false, k.lo == p.dst && k.hi == p.src && k.loPort == dport && k.hiPort == sport
		}
		if ok {
			f.last = t
			if srcLo == f.aIsLo {
				return f, 0
			}
			return f, 1
		}
	}
	var k flowKey
	var srcLo bool
	if p.hashed {
		// Keyed and hashed by the reader's prefetch (readahead.go).
		k, srcLo = p.key, p.srcLo
	} else {
		k.proto = p.proto
		src, dst := p.src, p.dst
		srcLo = less(src, dst) || (src == dst && sport <= dport)
		if srcLo {
			k.lo, k.hi, k.loPort, k.hiPort = src, dst, sport, dport
		} else {
			k.lo, k.hi, k.loPort, k.hiPort = dst, src, dport, sport
		}
	}
	// Packets come in trains of one flow: the last flow saves the
	// table's hashing and probing most of the time.
	f := a.lastFlow
	var h uint64
	if f == nil || !f.key.equal(&k) {
		if p.hashed {
			h = p.hash
		} else {
			h = a.flows.hash(&k)
		}
		f = a.flows.get(&k, h)
		if f != nil && !p.hashed { // warmed ahead otherwise (readahead.go)
			a.warm += warm(f)
		}
	}
	if f == nil {
		// create gets a copy: a pointer passed to a function value
		// escapes, and k itself would then be allocated for every
		// packet (13 % of the analyser's time on the bench capture).
		kc := k
		senderIsA, ok := create(&kc)
		if !ok {
			return nil, 0
		}
		if a.flows.len() >= a.cfg.MaxFlows {
			a.res.Stats.TruncatedFlows++
			return nil, 0
		}
		if p.proto == 6 {
			// One allocation for a TCP flow and its state: the
			// per-packet path then reads adjacent memory.
			tf := new(tcpFlow)
			tf.c.init()
			f = &tf.f
			f.tcp = &tf.c
		} else {
			f = new(flow)
		}
		f.key, f.hash, f.aIsLo, f.first, f.index = k, h, senderIsA == srcLo, t, len(a.names)
		a.flows.put(f)
		a.peak = max(a.peak, a.flows.len())
		if a.cfg.KeepSamples {
			a.names = append(a.names, "") // samples name their flow by index
		}
	}
	f.last = t
	a.lastFlow = f
	if srcLo == f.aIsLo {
		return f, 0
	}
	return f, 1
}

func addrPort(w [2]uint64, port uint16) string {
	var a [16]byte
	binary.BigEndian.PutUint64(a[:8], w[0])
	binary.BigEndian.PutUint64(a[8:], w[1])
	ip := netip.AddrFrom16(a).Unmap()
	return netip.AddrPortFrom(ip, port).String()
}

// ends returns side A's and B's addresses.
func (f *flow) ends() (string, string) {
	lo, hi := addrPort(f.key.lo, f.key.loPort), addrPort(f.key.hi, f.key.hiPort)
	if f.aIsLo {
		return lo, hi
	}
	return hi, lo
}

// scanEvery is how often (capture time) idle flows are looked for: an
// eighth of the idle timeout, within 1-15 s. A scan visits every live flow,
// so scanning every second took a tenth of the analyser's time; a closed
// connection now lingers 10-25 s instead of 10-11 s.
func (a *Analyzer) scanEvery() int64 {
	return int64(min(max(a.cfg.IdleTimeout/8, time.Second), 15*time.Second))
}

// evict finishes flows idle for the timeout (closed TCP after 10 s).
func (a *Analyzer) evict(now int64) {
	a.lastFlow = nil
	idle := int64(a.cfg.IdleTimeout)
	dead := a.dead[:0]
	for _, s := range a.flows.slots {
		f := s.f
		if f == nil {
			continue
		}
		limit := idle
		if f.tcp != nil && f.tcp.closed != "" {
			limit = min(idle, int64(10*time.Second))
		}
		if now-f.last > limit {
			dead = append(dead, f)
			if f.tcp != nil && f.tcp.closed != "" {
				a.closed.add(f.key, now)
			}
		}
	}
	a.finishAll(dead)
	a.res.Stats.EvictedFlows += len(dead)
	// The scratch must not hold the finished flows: kept reachable until
	// the next scan, they were most of the heap the collector traced
	// while the outputs were written.
	clear(dead)
	a.dead = dead[:0]
}

// finishAll finishes flows and removes them from the table, in the order
// they started (the table's order is the random hash's).
func (a *Analyzer) finishAll(fs []*flow) {
	slices.SortFunc(fs, func(x, y *flow) int { return cmp.Or(cmp.Compare(x.first, y.first), x.key.compare(&y.key)) })
	for _, f := range fs {
		a.finish(f)
		a.flows.remove(f)
	}
}

func (a *Analyzer) finish(f *flow) {
	A, B := f.ends()
	// A record goes to OnRecord as the flow leaves, and is kept for the
	// summary unless DropRecords.
	keep := !a.cfg.DropRecords
	switch {
	case f.tcp != nil:
		r := f.tcp.result(a, f, A, B)
		a.nTCP++
		a.emit(Record{TCP: &r})
		switch {
		case keep && a.spill != nil:
			a.spill.addTCP(&r)
		case keep:
			a.res.TCP = append(a.res.TCP, r)
		}
	case f.quic != nil:
		r := f.quic.result(a, f, A, B)
		a.nQUIC++
		a.emit(Record{QUIC: &r})
		switch {
		case keep && a.spill != nil:
			a.spill.addQUIC(&r)
		case keep:
			a.res.QUIC = append(a.res.QUIC, r)
		}
	}
	if a.cfg.OnSample != nil && f.quic != nil {
		for i := range f.samples {
			s := &f.samples[i]
			a.streamSample(f, s.t, s.rtt, s.method, s.flag)
		}
	}
	if a.cfg.KeepSamples {
		a.names[f.index] = A + " > " + B
		a.samples = append(a.samples, f.samples...)
	}
	f.samples = nil
}

// streamSample gives one RTT sample of f to Config.OnSample ("" flag:
// valid).
func (a *Analyzer) streamSample(f *flow, t, rtt int64, m Method, flag string) {
	if f.name == "" {
		A, B := f.ends()
		f.name = A + " > " + B
	}
	a.cfg.OnSample(model.PassiveRTT{TimeS: float64(t-a.first) / 1e9, Flow: f.name, Method: m.String(),
		RTTMs: float64(rtt) / 1e6, Valid: flag == "", Flag: flag})
}

func (a *Analyzer) emit(r Record) {
	if a.cfg.OnRecord != nil {
		a.cfg.OnRecord(r)
	}
}

// Finish ends the analysis: every live flow is finished. truth, if not
// nil, is compared with the samples.
func (a *Analyzer) Finish(truth *TruthIndex) *model.Analysis {
	a.lastFlow = nil
	a.finishAll(a.flows.flows())
	if a.shards != nil {
		a.mergeShards()
	}
	r := &a.res
	if a.started {
		r.StartUnix = float64(a.first) / 1e9
		r.DurationS = float64(a.last-a.first) / 1e9
	}
	// Flows finish in eviction order, partly the map's (random) order:
	// report them by start.
	r.TCP = byStart(r.TCP, tcpOrder)
	r.QUIC = byStart(r.QUIC, quicOrder)
	httpConns := r.TCP
	if s := a.spill; s != nil {
		s.finish()
		if s.err != nil {
			r.Errors = append(r.Errors, s.err.Error()+"; the records after it were kept in memory")
		}
		if s.spilled() {
			r.Spill, httpConns = s, s.http
		} else {
			// A capture of few connections: all in memory, as
			// without a spill.
			r.TCP, r.QUIC = s.tcp.buf, s.quic.buf
			httpConns = r.TCP
		}
	}
	r.Stats.PeakLiveFlows = a.peak
	r.Stats.WallS = a.wall.Seconds()
	if a.wall > 0 {
		r.Stats.PacketsPerS = float64(r.Packets) / a.wall.Seconds()
	}
	r.HTTPPages = http1.Pages(httpConns, http1.DefaultPageGap)
	r.Notes = append(r.Notes, a.skip.notes()...)
	if a.dups.n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d packets counted once: a Linux cooked capture (-i any) held them twice, on another interface or direction within 1 s (forwarded by the capturing host)", a.dups.n))
	}
	if truth != nil {
		if a.cfg.KeepSamples {
			r.Truth = truth.compare(a)
		} else {
			r.Errors = append(r.Errors, "ground-truth comparison needs every sample (Config.KeepSamples)")
		}
	}
	return r
}

// Close releases what the analysis holds outside memory (the spilled
// records' file, Config.Spill): call it once the analysis is written.
func (a *Analyzer) Close() error {
	if a.spill == nil {
		return nil
	}
	return a.spill.close()
}

// byStart orders records by start time and then their ends' names (a
// stable sort: a 4-tuple reused within a nanosecond keeps its order), in
// place. The records are large: an order of indexes is sorted, and the
// records moved once.
func byStart[T any](recs []T, key func(*T) (float64, string, string)) []T {
	idx := make([]int32, len(recs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(i, j int32) int {
		ti, ai, bi := key(&recs[i])
		tj, aj, bj := key(&recs[j])
		return cmp.Or(cmp.Compare(ti, tj), strings.Compare(ai, aj), strings.Compare(bi, bj), cmp.Compare(i, j))
	})
	// Permute in place, cycle by cycle (a copy of every record was a
	// fifth of the 10 M bench capture's peak heap): position k takes
	// the record at idx[k].
	for k := range idx {
		if idx[k] < 0 {
			continue
		}
		tmp := recs[k]
		for j := k; ; {
			src := int(idx[j])
			idx[j] = -1
			if src == k {
				recs[j] = tmp
				break
			}
			recs[j] = recs[src]
			j = src
		}
	}
	return recs
}

// Records returns how many TCP connections and QUIC flows finished,
// including those not kept (Config.DropRecords).
func (a *Analyzer) Records() (tcp, quic int) { return a.nTCP, a.nQUIC }

// Samples returns every RTT sample as model records (for --samples, CSV
// and plots), with ground truth when truth is not nil.
func (a *Analyzer) Samples(truth *TruthIndex) []model.PassiveRTT {
	out := make([]model.PassiveRTT, 0, len(a.samples))
	for i := range a.samples {
		s := &a.samples[i]
		r := model.PassiveRTT{
			TimeS: float64(s.t-a.first) / 1e9, Flow: a.names[s.flow], Method: s.method.String(),
			RTTMs: float64(s.rtt) / 1e6, Valid: s.flag == "", Flag: s.flag,
		}
		if truth != nil {
			if v, m := truth.trueRTT(s); m == matched {
				r.TrueMs = float64(v) / 1e6
			}
		}
		out = append(out, r)
	}
	return out
}

// Method is an RTT estimation method.
type Method uint8

// RTT methods. "Side B" is observer → B (server) → observer.
const (
	TSFull Method = iota
	TSSideA
	TSSideB
	SeqAckSideA
	SeqAckSideB
	SpinFullUp   // edges client→server
	SpinFullDown // edges server→client
	SpinSideServer
	SpinSideClient
	numMethods
)

var methodNames = [numMethods]string{"ts-full", "ts-side-a", "ts-side-b", "seqack-side-a", "seqack-side-b",
	"spin-full-up", "spin-full-down", "spin-side-server", "spin-side-client"}

func (m Method) String() string {
	if m < numMethods {
		return methodNames[m]
	}
	return "method-" + strconv.Itoa(int(m))
}

// sample is one RTT estimate as the analyser keeps it.
type sample struct {
	t      int64
	rtt    int64
	flow   int32
	method Method
	flag   string // "" = valid
	// ids identify the packets of the sample's chain: for a component,
	// (start, end); for a spin full RTT, (opening edge, reflected edge,
	// closing edge). pairs marks a sum of two independent components
	// (TCP full RTT): ids holds their starts and ends their ends.
	ids   [3]uint64
	ends  [3]uint64
	n     uint8
	pairs bool
}

// notes says what was not analysed and why, one line per reason, most
// packets first within a reason.
func (s *skips) notes() []string {
	var out []string
	type kv[K any] struct {
		k K
		n uint64
	}
	sorted := func(m map[pcap.LinkType]uint64) []kv[pcap.LinkType] {
		var l []kv[pcap.LinkType]
		for k, n := range m {
			l = append(l, kv[pcap.LinkType]{k, n})
		}
		slices.SortFunc(l, func(x, y kv[pcap.LinkType]) int { return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.k, y.k)) })
		return l
	}
	for _, l := range sorted(s.link) {
		out = append(out, fmt.Sprintf("%d packets not analysed: link type %s is not supported (sonde reads Ethernet, raw IP, Linux SLL/SLL2, null/loop, PPP and Cisco HDLC)", l.n, l.k))
	}
	if s.notIP > 0 {
		out = append(out, fmt.Sprintf("%d packets not analysed: not IPv4 or IPv6 (ARP, LLDP, other EtherTypes)", s.notIP))
	}
	if s.malformed > 0 {
		out = append(out, fmt.Sprintf("%d packets not analysed: malformed or truncated IP, TCP or UDP header", s.malformed))
	}
	if s.fragments > 0 {
		out = append(out, fmt.Sprintf("%d packets not analysed: IP fragments (not reassembled)", s.fragments))
	}
	var protos []string
	var np uint64
	for p, n := range s.proto {
		if n > 0 {
			np += n
			protos = append(protos, fmt.Sprintf("%d: %d", p, n))
		}
	}
	if np > 0 {
		out = append(out, fmt.Sprintf("%d packets not analysed: IP protocols other than TCP and UDP (protocol: packets %s)", np, strings.Join(protos, ", ")))
	}
	names := slices.Sorted(maps.Keys(s.quic))
	slices.SortStableFunc(names, func(x, y string) int { return cmp.Compare(s.quic[y].packets, s.quic[x].packets) })
	for _, v := range names {
		q := s.quic[v]
		out = append(out, fmt.Sprintf("QUIC %s: %d flows, %d packets not analysed for RTT: %s", v, q.flows, q.packets, q.why))
	}
	for _, v := range slices.Sorted(maps.Keys(s.invariant)) {
		q := s.invariant[v]
		out = append(out, fmt.Sprintf("QUIC %s: %d flows, %d packets of a version sonde does not know, found by the version-independent invariants (RFC 8999); the spin bit is read where QUIC v1 has it (0x20 of the short header's first byte)", v, q.flows, q.packets))
	}
	if s.udp > 0 {
		type pn struct {
			p uint16
			n int64
		}
		var l []pn
		for p, n := range s.udpPorts {
			l = append(l, pn{p, n})
		}
		slices.SortFunc(l, func(x, y pn) int { return cmp.Or(cmp.Compare(y.n, x.n), cmp.Compare(x.p, y.p)) })
		var top []string
		for _, x := range l[:min(len(l), 5)] {
			top = append(top, fmt.Sprintf("%d (%d)", x.p, x.n))
		}
		out = append(out, fmt.Sprintf("%d UDP packets not analysed: no QUIC long header seen in their flow and not on a --quic-port; lower ports (packets): %s",
			s.udp, strings.Join(top, ", ")))
	}
	return out
}
