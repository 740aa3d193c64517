package passive

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive/spinbit"
)

type quicConn struct {
	version   uint32
	family    spinbit.Family
	dcidLen   [2]int // short-header DCID length per direction (0→1 uses the server's SCID)
	learned   [2]bool
	dcid      [2][20]byte
	haveDCID  [2]bool
	packets   [2]uint64
	bytes     [2]uint64
	short     [2]uint64
	coalesced uint64
	greased   uint64
	cidChange [2]int
	spin      spinbit.Observer
	loss      spinbit.LossObserver
	// The observer's samples are taken as they come: summaries per method
	// (SpinFullUp…SpinSideClient) and counts per flag, so memory stays
	// per flow, not per sample.
	stats [4]rttStats
	flags [spinbit.NotSpinning + 1]int
	// invariant: the version is unknown; the flow was found by RFC 8999's
	// invariants and its short headers are read as v1's (spin bit 0x20).
	invariant bool
}

func (a *Analyzer) udpPacket(t int64, p *ipPacket, id uint64) {
	if len(p.l4) < 8 {
		a.skip.malformed++
		a.res.Skipped++
		return
	}
	sport, dport := binary.BigEndian.Uint16(p.l4), binary.BigEndian.Uint16(p.l4[2:])
	payload := p.l4[8:]
	if len(payload) == 0 {
		return
	}
	var cand quicCand
	confirmed := false
	f, dir := a.lookup(p, sport, dport, t, func(k *flowKey) (bool, bool) {
		if fam, _ := spinbit.Detect(payload); fam != spinbit.NotQUIC {
			// The client sends the first long-header packet (its
			// Initial) unless the sender's port is a server's; the
			// server sends version negotiation.
			return fam != spinbit.Negotiation && (!a.serverPort(sport) || a.serverPort(dport)), true
		}
		for _, q := range a.cfg.QUICPorts {
			if dport == q {
				return true, true
			}
			if sport == q {
				return false, true
			}
		}
		// A long header of a version sonde does not know: QUIC once
		// the peer answers it (quicinv.go).
		srcLo := less(p.src, p.dst) || (p.src == p.dst && sport <= dport)
		if cand, confirmed = a.cands.offer(k, srcLo, payload, t, p.length, min(sport, dport)); confirmed {
			// This answers the first sender (port dport), which is
			// the client unless only its port is a server's.
			firstIsClient := !a.serverPort(dport) || a.serverPort(sport)
			return !firstIsClient, true
		}
		return false, false
	})
	if f == nil {
		a.skip.udp++
		bump(a.skip.udpPorts, min(sport, dport), 1)
		a.res.Skipped++
		return
	}
	if f.quic == nil {
		f.quic = &quicConn{}
		if confirmed {
			f.quic.confirm(a, f, dir, &cand)
		}
	}
	f.quic.datagram(a, f, dir, t, payload, p.length, id)
}

// confirm starts a flow from a confirmed candidate (quicinv.go): the
// first sender's datagrams before the answer, counted as UDP not analysed
// when they came, join the flow's counts (their spin bits are lost), and
// its SCID sets the DCID length of the answers' short headers.
func (c *quicConn) confirm(a *Analyzer, f *flow, dir uint8, cand *quicCand) {
	a.skip.udp -= cand.packets
	if n, ok := a.skip.udpPorts[cand.port]; ok {
		if n <= int64(cand.packets) {
			delete(a.skip.udpPorts, cand.port)
		} else {
			a.skip.udpPorts[cand.port] = n - int64(cand.packets)
		}
	}
	a.res.Skipped -= cand.packets
	f.first = cand.t
	c.version, c.family, c.invariant = cand.version, spinbit.Private, true
	c.packets[dir^1] += cand.packets
	c.short[dir^1] += cand.short
	c.bytes[dir^1] += cand.bytes
	c.dcidLen[dir], c.learned[dir] = int(cand.scidLen), true
}

// serverPort reports whether a UDP port is a QUIC server's: a configured
// QUIC port or a well-known one.
func (a *Analyzer) serverPort(p uint16) bool {
	return p < 1024 || slices.Contains(a.cfg.QUICPorts, p)
}

func (c *quicConn) datagram(a *Analyzer, f *flow, dir uint8, t int64, b []byte, size int, id uint64) {
	c.packets[dir]++
	c.bytes[dir] += uint64(size)
	if b[0]&0x80 != 0 && c.version == 0 {
		// The first version other than version negotiation and grease
		// is the connection's (a client may grease its first Initial).
		if fam, v := spinbit.Detect(b); fam != spinbit.NotQUIC && fam != spinbit.Negotiation && fam != spinbit.Greased {
			c.version, c.family = v, fam
		}
	}
	if c.family == spinbit.Private && c.version>>4 != 0xfaceb00 {
		// A version sonde does not know (not mvfst's): its long headers
		// are read by the invariants, its short headers as v1's.
		c.invariant = true
	}
	if c.family != spinbit.IETF && c.family != spinbit.NotQUIC && !c.invariant {
		return // a version whose headers sonde does not read: counted, reported in the notes
	}
	var h spinbit.Header
	for n := 0; len(b) > 0 && n < 8; n++ {
		if n > 0 {
			c.coalesced++
		}
		rest, err := spinbit.Parse(b, c.dcidLen[dir], &h)
		if err == spinbit.ErrVersion && h.Long && h.Version != 0 && (c.invariant || c.version == 0) {
			c.invariantLong(dir, b)
			return
		}
		if err != nil {
			return
		}
		if h.Long {
			if h.Version != 0 && c.version == 0 {
				c.version = h.Version
			}
			// A sender's SCID is the DCID its peer puts in short
			// headers: it sets the length for the other direction.
			if h.Type == spinbit.Initial || h.Type == spinbit.Handshake {
				c.dcidLen[dir^1], c.learned[dir^1] = len(h.SCID), true
			}
		} else {
			c.shortPacket(a, f, dir, t, &h, id)
		}
		if !h.FixedBit {
			c.greased++
		}
		b = rest
	}
}

// invariantLong reads a long header of a version sonde does not know by
// RFC 8999's invariants: its SCID is the DCID of the peer's short headers.
// Its length field is the version's, so a coalesced packet after it is
// not looked for.
func (c *quicConn) invariantLong(dir uint8, b []byte) {
	v, _, scid, ok := spinbit.Invariant(b)
	if !ok {
		return
	}
	if c.version == 0 {
		c.version, c.family = v, spinbit.Private
	}
	c.invariant = true
	c.dcidLen[dir^1], c.learned[dir^1] = len(scid), true
}

func (c *quicConn) shortPacket(a *Analyzer, f *flow, dir uint8, t int64, h *spinbit.Header, id uint64) {
	c.short[dir]++
	if c.learned[dir] {
		var cur [20]byte
		copy(cur[:], h.DCID)
		if c.haveDCID[dir] && cur != c.dcid[dir] {
			c.cidChange[dir]++
			c.spin.ResetDir(dir)
		}
		c.dcid[dir], c.haveDCID[dir] = cur, true
	}
	c.spin.Packet(dir, t, h.Spin, id)
	if len(c.spin.Samples) > 0 {
		c.take(a, f)
	}
	c.loss.Packet(dir, h.First)
}

// unanalysed says why a flow of a version family is not analysed ("" if
// it is).
func unanalysed(f spinbit.Family) string {
	switch f {
	case spinbit.Draft:
		return "an IETF draft whose headers sonde does not read (it reads v1, v2 and drafts 29-34)"
	case spinbit.GoogleQUIC:
		return "Google QUIC, whose headers have no spin bit"
	case spinbit.Private:
		return "an unknown or private version: its short header may not carry a spin bit"
	}
	return ""
}

// spinMethod is the method of a spin sample.
func spinMethod(s *spinbit.Sample) Method {
	switch {
	case s.Kind == spinbit.Full && s.Dir == 1:
		return SpinFullDown
	case s.Kind == spinbit.Full:
		return SpinFullUp
	case s.Dir == 0:
		return SpinSideServer // opened by a client→server edge
	}
	return SpinSideClient
}

// take moves the observer's new samples into the summaries (and the
// flow's sample list when every sample is kept).
func (c *quicConn) take(a *Analyzer, f *flow) {
	for i := range c.spin.Samples {
		s := &c.spin.Samples[i]
		m := spinMethod(s)
		c.stats[m-SpinFullUp].add(s.RTT, s.Flag == spinbit.Valid)
		if s.Flag != spinbit.Valid {
			c.flags[s.Flag]++
		}
		// Streamed samples (OnSample) wait for the flow's end too: a
		// flow found not to spin then voids them all (result).
		if a.cfg.KeepSamples || a.cfg.OnSample != nil {
			smp := sample{t: s.T, rtt: s.RTT, flow: int32(f.index), method: m, ids: s.IDs, n: s.N}
			if s.Flag != spinbit.Valid {
				smp.flag = s.Flag.String()
			}
			f.samples = append(f.samples, smp)
		}
	}
	c.spin.Samples = c.spin.Samples[:0]
}

func (c *quicConn) result(a *Analyzer, f *flow, A, B string) model.QUICConn {
	st := c.spin.Finish()
	r := model.QUICConn{Client: A, Server: B, DCIDLen: c.dcidLen,
		StartS: float64(f.first-a.first) / 1e9, DurationS: float64(f.last-f.first) / 1e9,
		Packets: c.packets, Bytes: c.bytes, Short: c.short, Coalesced: c.coalesced, Greased: c.greased,
		CIDChange: c.cidChange, Spin: st.String(), SpinDir: [2]string{c.spin.DirState(0).String(), c.spin.DirState(1).String()}}
	if c.version != 0 {
		r.Version = spinbit.VersionName(c.version)
	}
	if c.invariant {
		r.Version += " (unknown)"
		q := a.skip.invariant[r.Version]
		if q == nil && len(a.skip.invariant) < maxSkipKeys {
			q = &quicSkip{}
			a.skip.invariant[r.Version] = q
		}
		if q != nil {
			q.flows++
			q.packets += c.packets[0] + c.packets[1]
		}
	}
	if why := unanalysed(c.family); why != "" && !c.invariant {
		// Counted, not analysed: the record has the packet counts and
		// the notes say why there is no RTT.
		q := a.skip.quic[r.Version]
		if q == nil && len(a.skip.quic) < maxSkipKeys {
			q = &quicSkip{why: why}
			a.skip.quic[r.Version] = q
		}
		if q != nil {
			q.flows++
			q.packets += c.packets[0] + c.packets[1]
		}
		r.Spin = "not-analysed"
		return r
	}
	for d := range uint8(2) {
		_, r.Edges[d], r.Glitches[d] = c.spin.Counts(d)
	}
	if st == spinbit.Constant || st == spinbit.Random {
		// Every sample so far is void: the flow does not spin.
		var n int
		for i := range c.stats {
			n += int(c.stats[i].n + c.stats[i].rejected)
			c.stats[i] = rttStats{rejected: c.stats[i].n + c.stats[i].rejected}
		}
		c.flags = [len(c.flags)]int{}
		c.flags[spinbit.NotSpinning] = n
		flag := spinbit.NotSpinning.String()
		for i := range f.samples {
			f.samples[i].flag = flag
		}
	}
	for fl, n := range c.flags {
		if n > 0 {
			r.Rejected = append(r.Rejected, model.Count{Name: spinbit.Flag(fl).String(), Count: n})
		}
	}
	slices.SortFunc(r.Rejected, func(x, y model.Count) int { return strings.Compare(x.Name, y.Name) })
	for d, name := range [2]string{"up", "down"} {
		lb := c.loss.Result(uint8(d))
		if !lb.Present {
			continue
		}
		r.LossBits = append(r.LossBits, model.QUICLossBits{Direction: name, Blocks: lb.Blocks,
			Expected: lb.Expected, Seen: lb.Seen, UpstreamLost: lb.Upstream,
			UpstreamLossPct: 100 * float64(lb.Upstream) / float64(lb.Expected),
			EndToEndLost:    lb.LMarks, EndToEndLossPct: 100 * float64(lb.LMarks) / float64(max(lb.Packets, 1))})
	}
	at := func(m Method) model.RTTSummary { return c.stats[m-SpinFullUp].summary() }
	r.SpinRTT = [2]model.RTTSummary{at(SpinFullUp), at(SpinFullDown)}
	r.Component = [2]model.RTTSummary{at(SpinSideServer), at(SpinSideClient)}
	return r
}
