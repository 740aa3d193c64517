package probe

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// FuzzMatchReply feeds arbitrary datagrams to a STAMP stream's reply
// path with 64 probes outstanding: it must never panic, and a datagram is
// taken for a probe only when it echoes that probe's sequence number,
// SSID and send timestamp exactly.
func FuzzMatchReply(f *testing.F) {
	const ssid = 0x1234
	mk := func(seq uint32, ts uint64, id uint16, n int) []byte {
		b := make([]byte, n)
		binary.BigEndian.PutUint16(b[14:], id)
		binary.BigEndian.PutUint32(b[24:], seq)
		binary.BigEndian.PutUint64(b[28:], ts)
		return b
	}
	f.Add(mk(5, 1e18+5, ssid, 44))
	f.Add(mk(5, 1e18+6, ssid, 44))   // wrong timestamp
	f.Add(mk(5, 1e18+5, 0x4321, 44)) // wrong SSID
	f.Add(mk(70, 1e18+70, ssid, 44)) // never sent
	f.Add(mk(5, 1e18+5, 0, 41))      // TWAMP-Light
	f.Add(mk(3, 1e18+3, ssid, 120))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := &Prober{ring: NewRing(128)}
		s := &stream{p: p, cfg: StreamConfig{Kind: model.ProbeSTAMP, Target: "x"}}
		s.pend = newPending(10, 2e9, 8e9)
		k := &stampKind{s: s, cur: session{ssid: ssid}}
		s.k = k
		dst := netip.MustParseAddrPort("127.0.0.1:862")
		for i := range uint32(64) {
			s.pend.add(record{seq: i, session: ssid, wire: 1e18 + uint64(i), sentNs: 1e9 + int64(i)*1e8, dst: dst})
		}
		probe := make([]byte, stamp.BaseLen)
		k.handle(b, probe, dst, 1e9+65e8, 0)
		got := p.ring.Drain(nil)
		if len(got) > 1 {
			t.Fatalf("one datagram gave %d samples", len(got))
		}
		if len(got) == 1 {
			rp, _, _ := stamp.ParseReply(b, probe)
			if rp.SenderSeq >= 64 || uint64(rp.SenderTimestamp) != 1e18+uint64(rp.SenderSeq) || (rp.SSID != ssid && rp.SSID != 0) {
				t.Fatalf("reply %+v matched", rp)
			}
			if got[0].Seq != rp.SenderSeq || got[0].RTTNs != 65e8-int64(rp.SenderSeq)*1e8 {
				t.Fatalf("sample %+v for reply seq %d", got[0], rp.SenderSeq)
			}
		}
		// The same datagram again is at most a duplicate.
		k.handle(b, probe, dst, 1e9+65e8, 0)
		if n := len(p.ring.Drain(nil)); n != 0 {
			t.Fatalf("a replay gave %d samples", n)
		}
		// From another address nothing matches.
		k.handle(b, probe, netip.MustParseAddrPort("127.0.0.2:862"), 1e9+65e8, 0)
		if n := len(p.ring.Drain(nil)); n != 0 {
			t.Fatalf("a datagram from elsewhere gave %d samples", n)
		}
	})
}
