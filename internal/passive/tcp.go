package passive

import (
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive/tcprtt"
)

type tcpDir struct {
	st      model.TCPDir
	haveSeq bool
	high    uint32 // highest sequence end sent
	highT   int64
	lastAck uint32
	lastWin uint16
	haveAck bool
	series  []uint64 // unique bytes per interval
	finSeen bool
	// finEnd is the sequence number after this side's FIN; finAcked
	// that the peer acknowledged it.
	finEnd   uint32
	finAcked bool
	// isn is the initial sequence number of this side's SYN (haveISN):
	// a SYN with another ISN after the close is a new connection.
	isn     uint32
	haveISN bool
	// lastLen and maxLen are the last and largest payloads sent.
	lastLen, maxLen uint32
	// holes are sequence ranges skipped by a jump ahead; allocated at the
	// first one (most connections never have one, and the per-packet
	// path touches less memory without them).
	holes  *[maxHoles]hole
	nholes int
}

// maxHoles bounds the sequence holes remembered per direction.
const maxHoles = 32

type hole struct {
	start, end uint32
	t          int64
}

// fill removes [seq, end) from the holes and reports whether it was in
// one, with the time the hole appeared.
func (d *tcpDir) fill(seq, end uint32) (bool, int64) {
	for i := 0; i < d.nholes; i++ {
		h := &d.holes[i]
		if after(end, h.start) && after(h.end, seq) {
			t := h.t
			switch {
			case !after(h.start, seq) && !after(end, h.end) && seq == h.start:
				h.start = end
			case end == h.end:
				h.end = seq
			default:
				h.start = end // a fill in the middle: keep the upper part
			}
			if !after(h.end, h.start) {
				d.holes[i] = d.holes[d.nholes-1]
				d.nholes--
			}
			return true, t
		}
	}
	return false, 0
}

func (d *tcpDir) addHole(start, end uint32, t int64) {
	if d.holes == nil {
		d.holes = new([maxHoles]hole)
	}
	if d.nholes == maxHoles {
		copy(d.holes[:], d.holes[1:])
		d.nholes--
	}
	d.holes[d.nholes] = hole{start, end, t}
	d.nholes++
}

type tcpConn struct {
	dir     [2]tcpDir
	ts      tcprtt.Timestamps
	sa      tcprtt.SeqAck
	sawSYN  bool
	closed  string
	minRTT  int64 // smallest RTT sample so far
	minFull int64 // smallest TS full RTT, for the reordering window
	// lastComp is the latest TS component per starting direction.
	lastComp [2]tcprtt.Sample
	// binNs is the width of this connection's goodput bins: the
	// analysis interval, doubled each time the series would pass
	// maxSeriesBins (0: not yet set).
	binNs int64
	// http and tseq are the optional followers (http.go, tseq.go).
	http httpFollow
	tseq *timeSeq
	// rtt summarises the samples per method (TSFull … SeqAckSideB).
	rtt [SeqAckSideB + 1]rttStats
}

func (a *Analyzer) tcpPacket(t int64, p *ipPacket, id uint64) {
	var s tcpSegment
	if !decodeTCP(p.l4, p.l4Len, &s) {
		a.skip.malformed++
		a.res.Skipped++
		return
	}
	f, dir := a.lookup(p, s.sport, s.dport, t, func(k *flowKey) (bool, bool) {
		if s.flags&flagSYN == 0 && a.closed.recent(*k, t) {
			// A straggler (a retransmitted FIN, the last ACK, a RST)
			// of a connection that closed and was evicted: not the
			// start of a new one.
			a.res.Stats.AfterClose++
			return false, false
		}
		if s.flags&(flagSYN|flagACK) == flagSYN|flagACK {
			return false, true // SYN-ACK: the sender is the server
		}
		if s.flags&flagSYN != 0 {
			return true, true
		}
		// Mid-stream: the client usually has the higher (ephemeral) port.
		return s.sport > s.dport, true
	})
	if f == nil {
		return
	}
	if c := f.tcp; c.closed != "" && s.flags&(flagSYN|flagACK) == flagSYN {
		// A SYN on a closed connection: the same SYN again (a
		// retransmission) joins it, one with a new ISN opens a new
		// connection on the reused 4-tuple.
		if d := &c.dir[dir]; !d.haveISN || d.isn != s.seq {
			a.lastFlow = nil
			a.finishAll([]*flow{f})
			if f, dir = a.lookup(p, s.sport, s.dport, t, func(*flowKey) (bool, bool) { return true, true }); f == nil {
				return
			}
		}
	}
	f.tcp.packet(a, f, dir, t, p, &s, id)
}

// tcpFlow is a TCP flow allocated with its connection state.
type tcpFlow struct {
	f flow
	c tcpConn
}

func (c *tcpConn) init() {
	for i := range c.dir {
		c.dir[i].st.WindowScale = -1
	}
}

func (c *tcpConn) packet(a *Analyzer, f *flow, dir uint8, t int64, p *ipPacket, s *tcpSegment, id uint64) {
	d := &c.dir[dir]
	o := &c.dir[dir^1]
	st := &d.st
	st.Packets++
	st.Bytes += uint64(p.length)
	if s.flags&flagSYN != 0 {
		c.sawSYN = true
		if !d.haveISN {
			d.isn, d.haveISN = s.seq, true
		}
		st.MSS = int(s.mss)
		st.WindowScale = int(s.wscale)
		st.SACKPermitted = s.sackPerm
		st.Timestamps = s.hasTS
	}
	if s.hasTS {
		st.Timestamps = true
	}
	st.SACKBlocks += uint64(s.sackBlocks)
	switch {
	case s.flags&flagRST != 0:
		if c.closed == "" && c.rstInWindow(o, s.seq) {
			c.closed = "rst" // a RST after the close answers a late segment: the close was the FINs
		}
	case s.flags&flagFIN != 0 && !d.finSeen:
		d.finSeen, d.finEnd = true, s.seq+uint32(s.payloadLen)+1
		if s.flags&flagSYN != 0 {
			d.finEnd++
		}
	}
	if s.flags&flagACK != 0 && o.finSeen && !after(o.finEnd, s.ack) {
		o.finAcked = true
	}
	if d.finAcked && o.finAcked && c.closed == "" {
		// Both FINs sent and acknowledged: the last ACK closes.
		c.closed = "fin"
	}
	if s.window == 0 && s.flags&(flagRST|flagSYN) == 0 {
		st.ZeroWindows++
	}
	plen := uint32(s.payloadLen)
	seqLen := plen
	if s.flags&(flagSYN|flagFIN) != 0 {
		seqLen++
	}
	end := s.seq + seqLen
	retrans, ooo := false, false
	if plen > 0 && s.flags&(flagSYN|flagFIN|flagRST) == 0 && o.haveAck && o.lastWin == 0 {
		// A zero-window probe (data while the peer's window is closed),
		// as tcptrace: neither a retransmission nor new data, however
		// often it is resent; the data after the window opens is new.
		st.DataPackets++
		st.DataBytes += uint64(plen)
		st.ZeroWindowProbes++
		seqLen = 0
	}
	if seqLen > 0 {
		if plen > 0 {
			st.DataPackets++
			st.DataBytes += uint64(plen)
			d.lastLen = plen
			d.maxLen = max(d.maxLen, plen)
		}
		switch {
		case !d.haveSeq || after(end, d.high):
			newBytes := uint64(plen)
			if d.haveSeq && after(d.high, s.seq) {
				newBytes = uint64(end - d.high) // partly resent
				retrans = true
			}
			if d.haveSeq && after(s.seq, d.high) {
				// A hole: earlier segments missed the observer or come later.
				newBytes = uint64(plen)
				d.addHole(d.high, s.seq, t)
			}
			d.high, d.highT, d.haveSeq = end, t, true
			if s.flags&flagFIN != 0 && newBytes > 0 {
				newBytes--
			}
			if s.flags&flagSYN != 0 && newBytes > 0 && plen == 0 {
				newBytes = 0
			}
			st.UniqueBytes += newBytes
			c.addSeries(d, a, f, t, newBytes)
		default:
			// Below the high mark. Seen before: a retransmission. Filling
			// a hole: a late original if the hole is recent (reordering,
			// 3 ms as tshark, at most half the full RTT), else the
			// retransmission of a segment lost before the observer.
			inHole, ht := d.fill(s.seq, end)
			win := int64(3e6)
			if c.minFull > 0 {
				win = min(win, c.minFull/2)
			}
			if inHole && t-ht < win {
				ooo = true
				st.UniqueBytes += uint64(plen)
				c.addSeries(d, a, f, t, uint64(plen))
			} else {
				retrans = true
				if inHole {
					st.UniqueBytes += uint64(plen)
					c.addSeries(d, a, f, t, uint64(plen))
				}
			}
		}
		if retrans {
			st.Retransmissions++
		}
		if ooo {
			st.OutOfOrder++
		}
		if !ooo {
			c.sa.Data(dir, t, s.seq, end, id)
		}
	}
	pureDup := false
	if s.flags&flagACK != 0 {
		if plen == 0 && s.flags&(flagSYN|flagFIN|flagRST) == 0 && d.haveAck &&
			s.ack == d.lastAck && s.window == d.lastWin && o.haveSeq && after(o.high, s.ack) {
			st.DupACKs++
			pureDup = true
		}
		if !pureDup {
			if r, ok := c.sa.Ack(dir, t, s.ack, id); ok {
				c.add(a, f, t, r, SeqAckSideA, SeqAckSideB)
			}
		}
		d.lastAck, d.lastWin, d.haveAck = s.ack, s.window, true
	}
	if s.hasTS {
		// A segment without sequence space asks for no reply: its TSval
		// is echoed whenever the peer next sends, so it starts a sample
		// only when it clocks out the peer's next segment: when data the
		// observer saw is still unacknowledged, or when the peer's last
		// segment was full-sized (a bulk sender, whose data in flight
		// may not have reached this observer yet). A pure ACK that closes
		// an application's turn (a short last segment, or none) would
		// measure the application's think time.
		noReply := seqLen == 0 && s.flags&flagRST == 0 && (!o.haveSeq || !after(o.high, s.ack)) &&
			(o.lastLen < 512 || o.lastLen < o.maxLen)
		comp, full, gc, gf := c.ts.Packet(dir, t, s.tsval, s.tsecr, id, retrans || noReply, pureDup)
		if gc {
			c.lastComp[comp.Dir] = comp
			c.add(a, f, t, comp, TSSideA, TSSideB)
		}
		if gf {
			if c.minFull == 0 || full.RTT < c.minFull {
				c.minFull = full.RTT
			}
			c.rtt[TSFull].add(full.RTT, true)
			if a.cfg.OnSample != nil {
				a.streamSample(f, t, full.RTT, TSFull, "")
			}
			if a.cfg.KeepSamples {
				// The full RTT's truth is that of its two components.
				f.samples = append(f.samples, sample{t: t, rtt: full.RTT, flow: int32(f.index), method: TSFull,
					ids: [3]uint64{c.lastComp[0].StartID, c.lastComp[1].StartID}, n: 2, pairs: true,
					ends: [3]uint64{c.lastComp[0].EndID, c.lastComp[1].EndID}})
			}
		}
	}
	c.follow(a, dir, t, s, retrans)
}

// rstInWindow reports whether a RST with sequence number seq falls in
// the window of its receiver r (RFC 5961 3.2: a receiver drops a RST
// outside [RCV.NXT, RCV.NXT+RCV.WND)); an out-of-window RST (blind,
// stale, or answering a stray segment) does not close the connection.
// RCV.NXT is the receiver's last acknowledgment seen; a receiver that
// acknowledged nothing yet (a RST answering a SYN) cannot be checked, and
// the RST is taken. Without the handshake the window scale is unknown:
// the largest (14) is assumed, so that no real close is missed.
func (c *tcpConn) rstInWindow(r *tcpDir, seq uint32) bool {
	if !r.haveAck {
		return true
	}
	wnd := uint32(r.lastWin)
	switch {
	case !c.sawSYN:
		wnd <<= 14
	case c.dir[0].st.WindowScale >= 0 && c.dir[1].st.WindowScale >= 0:
		wnd <<= min(uint(r.st.WindowScale), 14)
	}
	return seq-r.lastAck < max(wnd, 1)
}

// add records a component sample: the side measured is the receiver of
// the starting packet's direction.
func (c *tcpConn) add(a *Analyzer, f *flow, t int64, r tcprtt.Sample, sideA, sideB Method) {
	m := sideB
	if r.Dir == 1 {
		m = sideA
	}
	if r.RTT > 0 && (c.minRTT == 0 || r.RTT < c.minRTT) {
		c.minRTT = r.RTT
	}
	c.rtt[m].add(r.RTT, true)
	if a.cfg.OnSample != nil {
		a.streamSample(f, t, r.RTT, m, "")
	}
	if a.cfg.KeepSamples {
		f.samples = append(f.samples, sample{t: t, rtt: r.RTT, flow: int32(f.index), method: m,
			ids: [3]uint64{r.StartID, r.EndID}, n: 2})
	}
}

func after(x, y uint32) bool { return int32(x-y) > 0 }

// maxSeriesBins bounds a connection's goodput series per direction.
const maxSeriesBins = 1 << 20

// addSeries counts n unique bytes at t in d's goodput series. A series
// about to pass maxSeriesBins is coarsened instead of cut: both
// directions' bins are merged in pairs and the connection's bin width
// doubles (at a 1 ms interval, after 17 minutes), so a long connection
// keeps its whole series at a coarser grain; result says so in a note.
func (c *tcpConn) addSeries(d *tcpDir, a *Analyzer, f *flow, t int64, n uint64) {
	if n == 0 || t < f.first {
		return
	}
	if c.binNs == 0 {
		c.binNs = int64(a.cfg.Interval)
	}
	i := (t - f.first) / c.binNs
	for i >= maxSeriesBins {
		for k := range c.dir {
			c.dir[k].series = mergePairs(c.dir[k].series)
		}
		c.binNs *= 2
		i = (t - f.first) / c.binNs
	}
	for int64(len(d.series)) <= i {
		d.series = append(d.series, 0)
	}
	d.series[i] += n
}

// mergePairs sums the bins of s in pairs, in place.
func mergePairs(s []uint64) []uint64 {
	for j := 0; j < len(s); j += 2 {
		v := s[j]
		if j+1 < len(s) {
			v += s[j+1]
		}
		s[j/2] = v
	}
	return s[:(len(s)+1)/2]
}

func (c *tcpConn) result(a *Analyzer, f *flow, A, B string) model.TCPConn {
	r := model.TCPConn{A: A, B: B, SawSYN: c.sawSYN, Closed: c.closed,
		StartS: float64(f.first-a.first) / 1e9, DurationS: float64(f.last-f.first) / 1e9,
		IntervalS: a.cfg.Interval.Seconds(), AB: c.dir[0].st, BA: c.dir[1].st}
	if c.binNs > int64(a.cfg.Interval) {
		r.IntervalS = float64(c.binNs) / 1e9
		a.res.Notes = append(a.res.Notes, fmt.Sprintf("%s – %s: goodput series in bins of %v, not the %v interval: the connection lasted %.0f s, and a series is kept within %d bins",
			A, B, time.Duration(c.binNs), a.cfg.Interval, r.DurationS, maxSeriesBins))
	}
	for i, dst := range []*model.TCPDir{&r.AB, &r.BA} {
		if r.DurationS > 0 {
			dst.GoodputBps = float64(dst.UniqueBytes) * 8 / r.DurationS
		}
		for _, b := range c.dir[i].series {
			dst.GoodputSeries = append(dst.GoodputSeries, float64(b)*8/r.IntervalS)
		}
	}
	r.TSFull = c.rtt[TSFull].summary()
	r.TSSideA = c.rtt[TSSideA].summary()
	r.TSSideB = c.rtt[TSSideB].summary()
	r.SeqAckSideA = c.rtt[SeqAckSideA].summary()
	r.SeqAckSideB = c.rtt[SeqAckSideB].summary()
	c.followResult(&r)
	return r
}
