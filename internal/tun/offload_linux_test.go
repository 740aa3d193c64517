package tun

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/checksum"
)

// tcpOptsTS is NOP, NOP, timestamps (TSval, TSecr): what Linux sends on
// every segment of an established connection.
func tcpOptsTS(tsval uint32) []byte {
	o := []byte{1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 7}
	binary.BigEndian.PutUint32(o[4:], tsval)
	return o
}

// tcpPacket builds an IPv4 or IPv6 TCP packet with complete checksums.
func tcpPacket(v4 bool, id uint16, seq uint32, flags byte, opts, payload []byte) []byte {
	l4 := 40
	if v4 {
		l4 = 20
	}
	th := 20 + len(opts)
	p := make([]byte, l4+th+len(payload))
	if v4 {
		p[0], p[1] = 0x45, 0x02 // ECT(0)
		binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
		binary.BigEndian.PutUint16(p[4:], id)
		p[6], p[8], p[9] = 0x40, 64, protoTCP // DF
		copy(p[12:], []byte{198, 18, 1, 2, 198, 18, 1, 1})
		binary.BigEndian.PutUint16(p[10:], checksum.Checksum(p[:20], 0))
	} else {
		p[0], p[1], p[3] = 0x60, 0x20, 0x42 // traffic class ECT(0), flow label
		binary.BigEndian.PutUint16(p[4:], uint16(len(p)-40))
		p[6], p[7] = protoTCP, 64
		copy(p[8:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 2})
		copy(p[24:], []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
	}
	t := p[l4:]
	binary.BigEndian.PutUint16(t[0:], 5201)
	binary.BigEndian.PutUint16(t[2:], 40000)
	binary.BigEndian.PutUint32(t[4:], seq)
	binary.BigEndian.PutUint32(t[8:], 777)
	t[12] = byte(th/4) << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 501)
	copy(t[20:], opts)
	copy(t[th:], payload)
	binary.BigEndian.PutUint16(t[16:], checksum.Checksum(t, pseudoSum(p, l4)))
	return p
}

// pseudoSum is the TCP pseudo-header sum of packet p with TCP at l4.
func pseudoSum(p []byte, l4 int) uint64 {
	n := uint64(len(p) - l4)
	if p[0]>>4 == 4 {
		return checksum.Sum(p[12:20], protoTCP+n)
	}
	return checksum.Sum(p[8:40], protoTCP+n)
}

// gsoFrame wraps a super-packet in a virtio-net header as the kernel hands
// it out: TCP segmentation at mss, checksum partial (the pseudo-header sum).
func gsoFrame(pkt []byte, mss int, ecn bool) []byte {
	l4 := 40
	typ := byte(unix.VIRTIO_NET_HDR_GSO_TCPV6)
	if pkt[0]>>4 == 4 {
		l4, typ = 20, unix.VIRTIO_NET_HDR_GSO_TCPV4
	}
	if ecn {
		typ |= unix.VIRTIO_NET_HDR_GSO_ECN
	}
	f := make([]byte, vnetHdrLen+len(pkt))
	f[0], f[1] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM, typ
	binary.LittleEndian.PutUint16(f[2:], uint16(l4+32))
	binary.LittleEndian.PutUint16(f[4:], uint16(mss))
	binary.LittleEndian.PutUint16(f[6:], uint16(l4))
	binary.LittleEndian.PutUint16(f[8:], tcpCsum)
	copy(f[vnetHdrLen:], pkt)
	p := f[vnetHdrLen:]
	binary.BigEndian.PutUint16(p[l4+tcpCsum:], ^checksum.Fold(pseudoSum(p, l4)))
	return f
}

func collect(t *testing.T, frame []byte) [][]byte {
	t.Helper()
	var out [][]byte
	n, err := segment(frame, make([]byte, maxFrame), func(b []byte) { out = append(out, bytes.Clone(b)) })
	if err != nil {
		t.Fatal(err)
	}
	if n != len(out) {
		t.Fatalf("segment returned %d, emitted %d", n, len(out))
	}
	return out
}

func payloadOf(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31 + i/251)
	}
	return b
}

// TestSegmentTCP cuts a 5000-byte super-packet at an MSS of 1448 and checks
// every field tcp_gso_segment would set, and that the checksums verify.
func TestSegmentTCP(t *testing.T) {
	for _, v4 := range []bool{true, false} {
		payload := payloadOf(5000)
		super := tcpPacket(v4, 0x1234, 0xfffff000, 0x10|tcpPSH|tcpFIN|tcpCWR, tcpOptsTS(99), payload)
		segs := collect(t, gsoFrame(super, 1448, true))
		if len(segs) != 4 {
			t.Fatalf("v4=%v: %d segments, want 4", v4, len(segs))
		}
		var got []byte
		for i, s := range segs {
			l4 := 40
			if v4 {
				l4 = 20
				if c := checksum.Checksum(s[:20], 0); c != 0 {
					t.Errorf("v4 segment %d: IP header checksum does not verify (%#04x)", i, c)
				}
				if id := binary.BigEndian.Uint16(s[4:]); id != 0x1234+uint16(i) {
					t.Errorf("segment %d: IP ID %#x, want %#x", i, id, 0x1234+i)
				}
				if int(binary.BigEndian.Uint16(s[2:])) != len(s) {
					t.Errorf("segment %d: IP length %d, packet %d", i, binary.BigEndian.Uint16(s[2:]), len(s))
				}
			} else if int(binary.BigEndian.Uint16(s[4:]))+40 != len(s) {
				t.Errorf("v6 segment %d: payload length %d, packet %d", i, binary.BigEndian.Uint16(s[4:]), len(s))
			}
			if c := checksum.Checksum(s[l4:], pseudoSum(s, l4)); c != 0 {
				t.Errorf("v4=%v segment %d: TCP checksum does not verify (%#04x)", v4, i, c)
			}
			if seq := binary.BigEndian.Uint32(s[l4+4:]); seq != 0xfffff000+uint32(i*1448) {
				t.Errorf("segment %d: seq %#x, want %#x", i, seq, 0xfffff000+uint32(i*1448))
			}
			want := byte(0x10)
			if i == 0 {
				want |= tcpCWR
			}
			if i == len(segs)-1 {
				want |= tcpPSH | tcpFIN
			}
			if f := s[l4+tcpFlags]; f != want {
				t.Errorf("v4=%v segment %d: flags %#02x, want %#02x", v4, i, f, want)
			}
			if !bytes.Equal(s[l4+20:l4+32], tcpOptsTS(99)) {
				t.Errorf("segment %d: options % x", i, s[l4+20:l4+32])
			}
			got = append(got, s[l4+32:]...)
		}
		if !bytes.Equal(got, payload) {
			t.Errorf("v4=%v: the segments' payloads do not make up the original", v4)
		}
	}
}

// TestSegmentPartialChecksum completes a UDP checksum left partial.
func TestSegmentPartialChecksum(t *testing.T) {
	p := make([]byte, 28+333)
	p[0], p[8], p[9] = 0x45, 64, protoUDP
	binary.BigEndian.PutUint16(p[2:], uint16(len(p)))
	copy(p[12:], []byte{198, 18, 1, 2, 198, 18, 1, 1})
	binary.BigEndian.PutUint16(p[10:], checksum.Checksum(p[:20], 0))
	binary.BigEndian.PutUint16(p[24:], uint16(len(p)-20))
	copy(p[28:], payloadOf(333))
	pseudo := checksum.Sum(p[12:20], protoUDP+uint64(len(p)-20))
	binary.BigEndian.PutUint16(p[26:], ^checksum.Fold(pseudo))
	f := append(make([]byte, vnetHdrLen), p...)
	f[0] = unix.VIRTIO_NET_HDR_F_NEEDS_CSUM
	binary.LittleEndian.PutUint16(f[6:], 20)
	binary.LittleEndian.PutUint16(f[8:], udpCsum)
	segs := collect(t, f)
	if len(segs) != 1 || len(segs[0]) != len(p) {
		t.Fatalf("%d packets, want the one", len(segs))
	}
	if c := checksum.Checksum(segs[0][20:], pseudo); c != 0 {
		t.Errorf("UDP checksum does not verify (%#04x)", c)
	}
	// Without NEEDS_CSUM the packet passes untouched.
	f[0] = 0
	if segs := collect(t, f); !bytes.Equal(segs[0], f[vnetHdrLen:]) {
		t.Error("a packet without offload was changed")
	}
}

// TestCoalesceRoundTrip: the segments of one burst coalesce into one frame,
// which the kernel's segmentation (here: segment) turns back into exactly
// the same packets.
func TestCoalesceRoundTrip(t *testing.T) {
	for _, v4 := range []bool{true, false} {
		super := tcpPacket(v4, 7, 1000, 0x10|tcpPSH, tcpOptsTS(5), payloadOf(40000))
		segs := collect(t, gsoFrame(super, 1448, false))
		if n := run(segs); n != len(segs) {
			t.Fatalf("v4=%v: %d of %d segments coalesce, want all", v4, n, len(segs))
		}
		buf := make([]byte, maxFrame)
		f := buf[:frame(buf, segs)]
		// The frame's partial checksum, completed as a kernel that
		// forwards it to a device without offloads would, verifies.
		whole := bytes.Clone(f[vnetHdrLen:])
		l4 := 40
		if v4 {
			l4 = 20
		}
		if err := completeChecksum(whole, l4, tcpCsum); err != nil {
			t.Fatal(err)
		}
		if c := checksum.Checksum(whole[l4:], pseudoSum(whole, l4)); c != 0 {
			t.Errorf("v4=%v: the coalesced frame's partial checksum, completed, does not verify (%#04x)", v4, c)
		}
		back := collect(t, f)
		if len(back) != len(segs) {
			t.Fatalf("v4=%v: %d segments back, want %d", v4, len(back), len(segs))
		}
		for i := range segs {
			if !bytes.Equal(back[i], segs[i]) {
				t.Errorf("v4=%v segment %d differs after coalescing and segmenting again", v4, i)
			}
		}
	}
}

// TestCoalesceStops checks what ends a run, as GRO would.
func TestCoalesceStops(t *testing.T) {
	seg := func(id uint16, seq uint32, flags byte, tsval uint32, n int) []byte {
		return tcpPacket(true, id, seq, flags, tcpOptsTS(tsval), payloadOf(n))
	}
	other := seg(2, 1100, 0x10, 5, 100)
	binary.BigEndian.PutUint16(other[22:], 40001) // another flow
	udp := append([]byte(nil), seg(2, 1100, 0x10, 5, 100)...)
	udp[9] = protoUDP
	for _, c := range []struct {
		name string
		pkts [][]byte
		want int
	}{
		{"one flow", [][]byte{seg(1, 1000, 0x10, 5, 100), seg(2, 1100, 0x10, 5, 100), seg(3, 1200, 0x10|tcpPSH, 5, 40)}, 3},
		{"short segment first", [][]byte{seg(1, 1000, 0x10, 5, 60), seg(2, 1060, 0x10, 5, 100)}, 1},
		{"longer segment after", [][]byte{seg(1, 1000, 0x10, 5, 100), seg(2, 1100, 0x10, 5, 101)}, 1},
		{"sequence gap", [][]byte{seg(1, 1000, 0x10, 5, 100), seg(2, 1101, 0x10, 5, 100)}, 1},
		{"IP ID not consecutive", [][]byte{seg(1, 1000, 0x10, 5, 100), seg(3, 1100, 0x10, 5, 100)}, 1},
		{"another timestamp", [][]byte{seg(1, 1000, 0x10, 5, 100), seg(2, 1100, 0x10, 6, 100)}, 1},
		{"PSH mid-run", [][]byte{seg(1, 1000, 0x10|tcpPSH, 5, 100), seg(2, 1100, 0x10, 5, 100)}, 1},
		{"FIN", [][]byte{seg(1, 1000, 0x10, 5, 100), seg(2, 1100, 0x10|tcpFIN, 5, 100)}, 1},
		{"CWR first", [][]byte{seg(1, 1000, 0x10|tcpCWR, 5, 100), seg(2, 1100, 0x10, 5, 100)}, 1},
		{"another flow", [][]byte{seg(1, 1000, 0x10, 5, 100), other}, 1},
		{"not TCP", [][]byte{seg(1, 1000, 0x10, 5, 100), udp}, 1},
		{"pure ACK", [][]byte{seg(1, 1000, 0x10, 5, 0), seg(2, 1000, 0x10, 5, 0)}, 1},
		{"64 KiB limit", [][]byte{seg(1, 1000, 0x10, 5, 30000), seg(2, 31000, 0x10, 5, 30000), seg(3, 61000, 0x10, 5, 30000)}, 2},
	} {
		if got := run(c.pkts); got != c.want {
			t.Errorf("%s: run of %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSegmentMalformed: damaged frames give an error or pass through, and
// never a panic.
func TestSegmentMalformed(t *testing.T) {
	valid := [][]byte{
		gsoFrame(tcpPacket(true, 1, 1, 0x10, tcpOptsTS(1), payloadOf(3000)), 1448, false),
		gsoFrame(tcpPacket(false, 1, 1, 0x10, tcpOptsTS(1), payloadOf(3000)), 1448, false),
	}
	for _, f := range []struct {
		name  string
		frame []byte
	}{
		{"empty", nil},
		{"header only", make([]byte, vnetHdrLen)},
		{"UDP segmentation", func() []byte { f := bytes.Clone(valid[0]); f[1] = unix.VIRTIO_NET_HDR_GSO_UDP_L4; return f }()},
		{"GSO size 0", func() []byte { f := bytes.Clone(valid[0]); f[4], f[5] = 0, 0; return f }()},
		{"TCP header beyond the packet", func() []byte { f := bytes.Clone(valid[0]); f[6] = 200; f[7] = 200; return f }()},
		{"checksum beyond the packet", func() []byte {
			f := bytes.Clone(valid[0])
			f[1] = 0
			binary.LittleEndian.PutUint16(f[8:], 60000)
			return f
		}()},
	} {
		if _, err := segment(f.frame, make([]byte, maxFrame), func([]byte) {}); err == nil {
			t.Errorf("%s: no error", f.name)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		f := bytes.Clone(valid[r.IntN(2)])
		for range 1 + r.IntN(4) {
			f[r.IntN(min(len(f), 90))] = byte(r.UintN(256))
		}
		f = f[:r.IntN(len(f)+1)]
		_, _ = segment(f, make([]byte, maxFrame), func([]byte) {})
	}
}
