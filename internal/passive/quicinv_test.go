package passive

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestQUICUnknownVersionByInvariants: a spinning flow whose long headers
// carry a version sonde does not know (0xf0f0f1f2, an experimental
// version seen in a public spindump trace, fixed bit clear, datagrams
// shorter than an Initial's 1200 bytes) on a port that is not a
// --quic-port is found by RFC 8999's invariants once the server answers
// the client's SCID, and its spin RTT is the same as the v1 flow's.
func TestQUICUnknownVersionByInvariants(t *testing.T) {
	p := &path{delay: wave}
	p.quicSpin(500e3, 3e9, nil, 0)
	v1, _, _ := analyse(t, p)
	for _, q := range p.out {
		b := q.data[20+8:]
		if b[0]&0x80 != 0 {
			b[0] &^= 0x40 // the experimental version clears the fixed bit
			binary.BigEndian.PutUint32(b[1:], 0xf0f0f1f2)
		}
	}
	res, _, _ := analyse(t, p)
	if len(v1.QUIC) != 1 || len(res.QUIC) != 1 {
		t.Fatalf("%d and %d QUIC flows, want 1 and 1", len(v1.QUIC), len(res.QUIC))
	}
	want, got := v1.QUIC[0], res.QUIC[0]
	if got.Version != "0xf0f0f1f2 (unknown)" || got.Client != want.Client || got.Packets != want.Packets || got.Short != want.Short {
		t.Errorf("flow %s > %s version %q packets %v short %v; want %s > %s, %v, %v", got.Client, got.Server, got.Version,
			got.Packets, got.Short, want.Client, want.Server, want.Packets, want.Short)
	}
	if got.Spin != want.Spin || got.SpinRTT != want.SpinRTT || got.Component != want.Component || got.SpinRTT[0].Samples == 0 {
		t.Errorf("spin %q %+v %+v, want v1's %q %+v %+v", got.Spin, got.SpinRTT, got.Component, want.Spin, want.SpinRTT, want.Component)
	}
	if n := notesWith(res, "QUIC 0xf0f0f1f2 (unknown): 1 flows"); len(n) != 1 || !strings.Contains(n[0], "RFC 8999") {
		t.Errorf("notes %q", res.Notes)
	}
	if res.Skipped != 0 {
		t.Errorf("%d packets skipped", res.Skipped)
	}
}

// TestQUICInvariantsNoFalsePositive: random UDP in both directions on
// ports that are not QUIC's passes one datagram's invariants now and then,
// never a confirmed flow; a lone long header without an answer is not QUIC
// either.
func TestQUICInvariantsNoFalsePositive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a := New(Config{Interface: -1})
	var tm int64
	var sent uint64
	for f := range 500 {
		cli := [4]byte{198, 18, byte(f >> 8), byte(f)}
		cport, sport := uint16(1024+rng.IntN(60000)), uint16(1024+rng.IntN(60000))
		for range 20 {
			for dir := range 2 {
				b := make([]byte, 8+rng.IntN(200))
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				b[0] |= 0x80 // every datagram looks like a long header
				tm += 1e5
				if dir == 0 {
					a.Packet(tm, udpPacket(cli, serverIP, cport, sport, b))
				} else {
					a.Packet(tm, udpPacket(serverIP, cli, sport, cport, b))
				}
				sent++
			}
		}
	}
	// One side only: a long header of an unknown version, never answered.
	lone := []byte{0xc0, 0xf0, 0xf0, 0xf1, 0xf2, 4, 1, 2, 3, 4, 4, 5, 6, 7, 8}
	for range 5 {
		tm += 1e6
		a.Packet(tm, udpPacket(clientIP, serverIP, 50000, 6121, lone))
		sent++
	}
	r := a.Finish(nil)
	if len(r.QUIC) != 0 || r.Skipped != sent {
		t.Fatalf("%d QUIC flows (%+v), %d of %d packets skipped", len(r.QUIC), r.QUIC, r.Skipped, sent)
	}
	if len(a.cands.m) > maxQUICCands {
		t.Errorf("%d candidates kept", len(a.cands.m))
	}
}
