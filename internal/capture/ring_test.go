package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// testBlock builds a TPACKET_V3 block as the kernel lays it out: the
// descriptor, then each packet's header, sockaddr_ll and data, 16-byte
// aligned, chained by next offsets, the last one's 0.
type testBlock struct {
	b    []byte
	off  int // where the next packet goes
	last int // the previous packet's offset
	n    int
}

const testMac = 96 // the kernel's data offset for a cooked socket

func newTestBlock(size int) *testBlock {
	return &testBlock{b: make([]byte, size), off: blockDescLen}
}

func (tb *testBlock) add(data []byte, length int, sec, nsec uint32, pkttype byte) {
	ne := binary.NativeEndian
	h := tb.b[tb.off:]
	ne.PutUint32(h[pktSecOff:], sec)
	ne.PutUint32(h[pktNsecOff:], nsec)
	ne.PutUint32(h[pktSnaplenOff:], uint32(len(data)))
	ne.PutUint32(h[pktLenOff:], uint32(length))
	ne.PutUint16(h[pktMacOff:], testMac)
	h[pktPkttypeOff] = pkttype
	copy(h[testMac:], data)
	size := (testMac + len(data) + 15) &^ 15
	ne.PutUint32(h[pktNextOff:], uint32(size))
	tb.last = tb.off
	tb.off += size
	tb.n++
}

// done writes the descriptor and returns the block.
func (tb *testBlock) done() []byte {
	ne := binary.NativeEndian
	ne.PutUint32(tb.b[blockStatusOff:], statusUser)
	ne.PutUint32(tb.b[blockNumPktsOff:], uint32(tb.n))
	ne.PutUint32(tb.b[blockFirstPktOff:], blockDescLen)
	ne.PutUint32(tb.b[blockLenOff:], uint32(tb.off))
	ne.PutUint32(tb.b[tb.last+pktNextOff:], 0)
	return tb.b
}

func readBlock(b []byte) ([]Packet, error) {
	r, err := openBlock(b)
	if err != nil {
		return nil, err
	}
	var out []Packet
	for {
		var p Packet
		ok, err := r.next(&p)
		if !ok {
			return out, err
		}
		p.Data = bytes.Clone(p.Data)
		out = append(out, p)
	}
}

// TestBlockWalk: the packets of a synthetic block come out whole, in
// order, with their times, lengths and directions.
func TestBlockWalk(t *testing.T) {
	tb := newTestBlock(4096)
	want := []Packet{
		{TimeNs: 1_700_000_000*1e9 + 5, Data: []byte{0x45, 1, 2, 3}, Length: 4},
		{TimeNs: 1_700_000_001*1e9 + 999_999_999, Data: bytes.Repeat([]byte{0x60}, 200), Length: 1500, Outgoing: true},
		{TimeNs: 1_700_000_002 * 1e9, Data: []byte{0x45}, Length: 1},
	}
	for _, p := range want {
		var pt byte
		if p.Outgoing {
			pt = pktOutgoing
		}
		tb.add(p.Data, p.Length, uint32(p.TimeNs/1e9), uint32(p.TimeNs%1e9), pt)
	}
	got, err := readBlock(tb.done())
	if err != nil || len(got) != len(want) {
		t.Fatalf("got %d packets, error %v; want %d", len(got), err, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.TimeNs != w.TimeNs || !bytes.Equal(g.Data, w.Data) || g.Length != w.Length || g.Outgoing != w.Outgoing {
			t.Errorf("packet %d: got %+v, want %+v", i, g, w)
		}
	}
	// An empty block (retired by the timeout) has no packet.
	if got, err := readBlock(newTestBlock(4096).done()); len(got) != 0 || err != nil {
		t.Errorf("empty block: %d packets, %v", len(got), err)
	}
}

// TestBlockBounds: every field the kernel writes is checked against the
// block before use: a corrupt one ends the walk with an error and no
// packet beyond the damage.
func TestBlockBounds(t *testing.T) {
	ne := binary.NativeEndian
	good := func() ([]byte, [2]int) {
		tb := newTestBlock(2048)
		tb.add(bytes.Repeat([]byte{0x45}, 100), 100, 1, 2, 0)
		first := tb.off
		tb.add(bytes.Repeat([]byte{0x45}, 100), 100, 1, 3, 0)
		return tb.done(), [2]int{blockDescLen, first}
	}
	cases := []struct {
		name   string
		damage func(b []byte, at [2]int)
		want   int // packets read before the damage
	}{
		{"block length past the block", func(b []byte, _ [2]int) { ne.PutUint32(b[blockLenOff:], 4096) }, 0},
		{"first packet in the descriptor", func(b []byte, _ [2]int) { ne.PutUint32(b[blockFirstPktOff:], 8) }, 0},
		{"first packet past the end", func(b []byte, _ [2]int) { ne.PutUint32(b[blockFirstPktOff:], 1<<31) }, 0},
		{"too many packets", func(b []byte, _ [2]int) { ne.PutUint32(b[blockNumPktsOff:], 1<<30) }, 0},
		{"more packets than chained", func(b []byte, _ [2]int) { ne.PutUint32(b[blockNumPktsOff:], 3) }, 2},
		{"data past the block", func(b []byte, at [2]int) { ne.PutUint32(b[at[1]+pktSnaplenOff:], 1<<20) }, 1},
		{"data offset in the header", func(b []byte, at [2]int) { ne.PutUint16(b[at[0]+pktMacOff:], 4) }, 0},
		{"data offset past the block", func(b []byte, at [2]int) { ne.PutUint16(b[at[0]+pktMacOff:], 0xffff) }, 0},
		{"next offset into the data", func(b []byte, at [2]int) { ne.PutUint32(b[at[0]+pktNextOff:], 16) }, 1},
		{"next offset zero mid-block", func(b []byte, at [2]int) { ne.PutUint32(b[at[0]+pktNextOff:], 0) }, 1},
		{"next offset past the block", func(b []byte, at [2]int) { ne.PutUint32(b[at[0]+pktNextOff:], 1<<31) }, 1},
		{"nanoseconds past a second", func(b []byte, at [2]int) { ne.PutUint32(b[at[1]+pktNsecOff:], 1e9) }, 1},
	}
	for _, c := range cases {
		b, at := good()
		c.damage(b, at)
		got, err := readBlock(b)
		if !errors.Is(err, errBlock) || len(got) != c.want {
			t.Errorf("%s: %d packets, error %v; want %d and a malformed block", c.name, len(got), err, c.want)
		}
	}
	if got, err := readBlock(make([]byte, 20)); err == nil || len(got) != 0 {
		t.Errorf("a block shorter than its descriptor: %d packets, %v", len(got), err)
	}
}

// FuzzBlock: whatever a block holds, the walk stays inside it and ends.
func FuzzBlock(f *testing.F) {
	tb := newTestBlock(1024)
	tb.add([]byte{0x45, 0, 0, 20}, 20, 1, 1, 0)
	tb.add([]byte{0x60}, 60, 2, 2, pktOutgoing)
	f.Add(tb.done())
	f.Add(newTestBlock(64).done())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := openBlock(b)
		if err != nil {
			return
		}
		for n := 0; ; n++ {
			if n > len(b)/pktMinLen {
				t.Fatalf("%d packets from a block of %d bytes", n, len(b))
			}
			var p Packet
			ok, _ := r.next(&p)
			if !ok {
				return
			}
			if len(p.Data) > len(b) || p.Length < len(p.Data) {
				t.Fatalf("packet of %d bytes (length %d) from a block of %d", len(p.Data), p.Length, len(b))
			}
		}
	})
}

func TestRingGeometry(t *testing.T) {
	for _, c := range []struct{ bytes, bs, nb int }{
		{DefaultRingBytes, 128 << 10, 256},
		{MinRingBytes, 16 << 10, 8},
		{MaxRingBytes, 128 << 10, 8192},
		{3<<20 + 5, 128 << 10, 24},
		{512<<10 + 5, 64 << 10, 8},
	} {
		if bs, nb := ringGeometry(c.bytes, 4096); bs != c.bs || nb != c.nb {
			t.Errorf("ring of %d: %d blocks of %d, want %d of %d", c.bytes, nb, bs, c.nb, c.bs)
		}
	}
}

// BenchmarkBlockWalk: the cost of reading a packet out of a block (a 1 MiB
// block of 100-byte packets).
func BenchmarkBlockWalk(b *testing.B) {
	tb := newTestBlock(1 << 20)
	data := bytes.Repeat([]byte{0x45}, 100)
	for tb.off+testMac+len(data)+16 < len(tb.b) {
		tb.add(data, len(data), 1, 2, 0)
	}
	blk := tb.done()
	for b.Loop() {
		r, err := openBlock(blk)
		if err != nil {
			b.Fatal(err)
		}
		var p Packet
		for {
			ok, _ := r.next(&p)
			if !ok {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tb.n), "ns/packet")
}
