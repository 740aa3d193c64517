package passive

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive/spinbit"
)

type quicConn struct {
	version   uint32
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
}

func (a *Analyzer) udpPacket(t int64, p *ipPacket, id uint64) {
	if len(p.l4) < 8 {
		a.res.Skipped++
		return
	}
	sport, dport := binary.BigEndian.Uint16(p.l4), binary.BigEndian.Uint16(p.l4[2:])
	payload := p.l4[8:]
	if len(payload) == 0 {
		return
	}
	f, dir := a.lookup(p, sport, dport, t, func() (bool, bool) {
		if payload[0]&0x80 != 0 && len(payload) >= 5 {
			v := binary.BigEndian.Uint32(payload[1:])
			if spinbit.KnownVersion(v) {
				// The client sends the first Initial; a server's first
				// packet comes from the well-known port.
				return !(sport < dport && sport < 1024), true
			}
			return false, false
		}
		for _, q := range a.cfg.QUICPorts {
			if dport == q {
				return true, true
			}
			if sport == q {
				return false, true
			}
		}
		return false, false
	})
	if f == nil {
		return
	}
	if f.quic == nil {
		f.quic = &quicConn{}
	}
	f.quic.datagram(f, dir, t, payload, p.length, id)
}

func (c *quicConn) datagram(f *flow, dir uint8, t int64, b []byte, size int, id uint64) {
	c.packets[dir]++
	c.bytes[dir] += uint64(size)
	var h spinbit.Header
	for n := 0; len(b) > 0 && n < 8; n++ {
		if n > 0 {
			c.coalesced++
		}
		rest, err := spinbit.Parse(b, c.dcidLen[dir], &h)
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
			c.shortPacket(f, dir, t, &h, id)
		}
		if !h.FixedBit {
			c.greased++
		}
		b = rest
	}
}

func (c *quicConn) shortPacket(f *flow, dir uint8, t int64, h *spinbit.Header, id uint64) {
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
	c.loss.Packet(dir, h.First)
}

func (c *quicConn) result(a *Analyzer, f *flow, A, B string) model.QUICConn {
	st := c.spin.Finish()
	r := model.QUICConn{Client: A, Server: B, DCIDLen: c.dcidLen,
		StartS: float64(f.first-a.first) / 1e9, DurationS: float64(f.last-f.first) / 1e9,
		Packets: c.packets, Bytes: c.bytes, Short: c.short, Coalesced: c.coalesced, Greased: c.greased,
		CIDChange: c.cidChange, Spin: st.String()}
	switch {
	case c.version == spinbit.Version1:
		r.Version = "v1"
	case c.version == spinbit.Version2:
		r.Version = "v2"
	case c.version>>8 == 0xff0000:
		r.Version = fmt.Sprintf("draft-%d", c.version&0xff)
	case c.version != 0:
		r.Version = fmt.Sprintf("%#08x", c.version)
	}
	for d := range uint8(2) {
		_, r.Edges[d], r.Glitches[d] = c.spin.Counts(d)
	}
	rejected := map[string]int{}
	for _, s := range c.spin.Samples {
		m := SpinFullUp
		switch {
		case s.Kind == spinbit.Full && s.Dir == 1:
			m = SpinFullDown
		case s.Kind == spinbit.Component && s.Dir == 0:
			m = SpinSideServer // opened by a client→server edge
		case s.Kind == spinbit.Component:
			m = SpinSideClient
		}
		smp := sample{t: s.T, rtt: s.RTT, flow: int32(f.index), method: m, ids: s.IDs, n: s.N}
		if s.Flag != spinbit.Valid {
			smp.flag = s.Flag.String()
			rejected[smp.flag]++
		}
		f.samples = append(f.samples, smp)
	}
	for _, k := range slices.Sorted(mapsKeys(rejected)) {
		r.Rejected = append(r.Rejected, model.Count{Name: k, Count: rejected[k]})
	}
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
	by := groupSamples(f.samples)
	r.SpinRTT = [2]model.RTTSummary{summarize(by[SpinFullUp]), summarize(by[SpinFullDown])}
	r.Component = [2]model.RTTSummary{summarize(by[SpinSideServer]), summarize(by[SpinSideClient])}
	return r
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
