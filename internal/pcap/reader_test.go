package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// ipv4 is a minimal IPv4/UDP packet with a marker byte.
func ipv4(marker byte) []byte {
	b := make([]byte, 28+4)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	b[9] = 17
	copy(b[12:], []byte{198, 18, 1, 1, 198, 18, 1, 2})
	b[28] = marker
	return b
}

func ipv6(marker byte) []byte {
	b := make([]byte, 40+8+4)
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], 12)
	b[6] = 17
	b[48] = marker
	return b
}

// frame wraps an IP packet in the given link layer.
func frame(link LinkType, ip []byte, vlans int) []byte {
	et := uint16(0x0800)
	if ip[0]>>4 == 6 {
		et = 0x86DD
	}
	switch link {
	case LinkEthernet:
		h := make([]byte, 12)
		for range vlans {
			h = binary.BigEndian.AppendUint16(h, 0x8100)
			h = binary.BigEndian.AppendUint16(h, 42)
		}
		h = binary.BigEndian.AppendUint16(h, et)
		return append(append(h, ip...), make([]byte, 6)...) // trailer padding
	case LinkSLL:
		h := make([]byte, 16)
		binary.BigEndian.PutUint16(h[14:], et)
		return append(h, ip...)
	case LinkSLL2:
		h := make([]byte, 20)
		binary.BigEndian.PutUint16(h, et)
		return append(h, ip...)
	case LinkNull:
		fam := uint32(2)
		if et == 0x86DD {
			fam = 30
		}
		return append(binary.LittleEndian.AppendUint32(nil, fam), ip...)
	case LinkLoop:
		fam := uint32(2)
		if et == 0x86DD {
			fam = 24
		}
		return append(binary.BigEndian.AppendUint32(nil, fam), ip...)
	}
	return ip
}

var links = []LinkType{LinkEthernet, LinkRaw, LinkSLL, LinkSLL2, LinkNull, LinkLoop, LinkIPv4}

func writePcap(t testing.TB, link LinkType, nanos bool, pkts [][]byte, t0 time.Time) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if nanos {
		w = pcapgo.NewWriterNanos(&buf)
	}
	if err := w.WriteFileHeader(65535, layers.LinkType(link)); err != nil {
		t.Fatal(err)
	}
	for i, p := range pkts {
		ts := t0.Add(time.Duration(i) * 1234567 * time.Nanosecond)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(p), Length: len(p)}, p); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func writeNG(t testing.TB, link LinkType, res uint8, pkts [][]byte, t0 time.Time) []byte {
	var buf bytes.Buffer
	intf := pcapgo.NgInterface{Name: "x", LinkType: layers.LinkType(link), TimestampResolution: pcapgo.NgResolution(res), SnapLength: 65535}
	w, err := pcapgo.NewNgWriterInterface(&buf, intf, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(intf); err != nil {
		t.Fatal(err)
	}
	for i, p := range pkts {
		ts := t0.Add(time.Duration(i) * 1234567 * time.Nanosecond)
		ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(p), Length: len(p), InterfaceIndex: i % 2}
		if err := w.WritePacketWithOptions(ci, p, pcapgo.NgPacketOptions{Flags: &pcapgo.NgEpbFlags{Direction: pcapgo.NgEpbFlagDirectionInbound}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeNGMicro writes a pcapng file with if_tsresol 6 by hand (pcapgo
// always writes nanoseconds), two interfaces, packets alternating.
func writeNGMicro(link LinkType, pkts [][]byte, t0 time.Time) []byte {
	le := binary.LittleEndian
	block := func(typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		b := le.AppendUint32(nil, typ)
		b = le.AppendUint32(b, n)
		b = append(b, body...)
		return le.AppendUint32(b, n)
	}
	shb := le.AppendUint32(nil, 0x1A2B3C4D)
	shb = le.AppendUint16(shb, 1)
	shb = le.AppendUint16(shb, 0)
	shb = le.AppendUint64(shb, ^uint64(0))
	out := block(0x0A0D0D0A, shb)
	idb := le.AppendUint16(nil, uint16(link))
	idb = le.AppendUint16(idb, 0)
	idb = le.AppendUint32(idb, 65535)
	idb = append(idb, 9, 0, 1, 0, 6, 0, 0, 0) // if_tsresol = 6
	idb = append(idb, 0, 0, 0, 0)
	out = append(out, block(1, idb)...)
	out = append(out, block(1, idb)...)
	for i, p := range pkts {
		us := uint64(t0.Add(time.Duration(i)*1234567*time.Nanosecond).UnixNano() / 1000)
		epb := le.AppendUint32(nil, uint32(i%2))
		epb = le.AppendUint32(epb, uint32(us>>32))
		epb = le.AppendUint32(epb, uint32(us))
		epb = le.AppendUint32(epb, uint32(len(p)))
		epb = le.AppendUint32(epb, uint32(len(p)))
		epb = append(epb, p...)
		for len(epb)%4 != 0 {
			epb = append(epb, 0)
		}
		epb = append(epb, 2, 0, 4, 0, 1, 0, 0, 0) // epb_flags: inbound
		out = append(out, block(6, epb)...)
	}
	return out
}

func readAll(t testing.TB, b []byte) ([]Packet, [][]byte, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, nil, err
	}
	var ps []Packet
	var nets [][]byte
	for {
		var p Packet
		err := r.Next(&p)
		if errors.Is(err, io.EOF) {
			return ps, nets, nil
		}
		if err != nil {
			return ps, nets, err
		}
		ps = append(ps, p)
		nets = append(nets, bytes.Clone(Network(p.LinkType, p.Data)))
	}
}

func TestFormatsAndLinks(t *testing.T) {
	t0 := time.Unix(1700000000, 123456789)
	for _, link := range links {
		var pkts [][]byte
		var want [][]byte
		for i := range 20 {
			ip := ipv4(byte(i))
			if i%2 == 1 && link != LinkIPv4 {
				ip = ipv6(byte(i))
			}
			want = append(want, ip)
			pkts = append(pkts, frame(link, ip, i%3))
		}
		for _, c := range []struct {
			name string
			data []byte
			res  time.Duration
		}{
			{"pcap-us", writePcap(t, link, false, pkts, t0), time.Microsecond},
			{"pcap-ns", writePcap(t, link, true, pkts, t0), time.Nanosecond},
			{"pcapng-us", writeNGMicro(link, pkts, t0), time.Microsecond},
			{"pcapng-ns", writeNG(t, link, 9, pkts, t0), time.Nanosecond},
		} {
			ps, nets, err := readAll(t, c.data)
			if err != nil {
				t.Fatalf("link %d %s: %v", link, c.name, err)
			}
			if len(ps) != len(pkts) {
				t.Fatalf("link %d %s: %d packets, want %d", link, c.name, len(ps), len(pkts))
			}
			for i, p := range ps {
				ts := t0.Add(time.Duration(i) * 1234567 * time.Nanosecond).Truncate(c.res)
				if p.TimeNs != ts.UnixNano() {
					t.Errorf("link %d %s #%d: time %d, want %d", link, c.name, i, p.TimeNs, ts.UnixNano())
				}
				// Ethernet trailer padding stays: IP's length field trims it.
				if !bytes.HasPrefix(nets[i], want[i]) {
					t.Errorf("link %d %s #%d: network layer %x, want %x", link, c.name, i, nets[i], want[i])
				}
				if c.name[:6] == "pcapng" && (p.Interface != i%2 || p.Direction != 1) {
					t.Errorf("%s #%d: interface %d direction %d", c.name, i, p.Interface, p.Direction)
				}
			}
		}
	}
}

func TestBigEndianPcap(t *testing.T) {
	// A big-endian microsecond pcap written by hand.
	be := binary.BigEndian
	b := be.AppendUint32(nil, 0xa1b2c3d4)
	b = be.AppendUint16(b, 2)
	b = be.AppendUint16(b, 4)
	b = append(b, make([]byte, 8)...)
	b = be.AppendUint32(b, 65535)
	b = be.AppendUint32(b, uint32(LinkRaw))
	ip := ipv4(7)
	b = be.AppendUint32(b, 100)
	b = be.AppendUint32(b, 5)
	b = be.AppendUint32(b, uint32(len(ip)))
	b = be.AppendUint32(b, uint32(len(ip)))
	b = append(b, ip...)
	ps, _, err := readAll(t, b)
	if err != nil || len(ps) != 1 || ps[0].TimeNs != 100e9+5000 {
		t.Fatalf("got %v %+v", err, ps)
	}
}

func TestTsresolPow2(t *testing.T) {
	ifc := iface{pow10: -1, pow2: 30}
	// 3.5 s in 2^-30 units.
	if got := ifc.nanos(3<<30 | 1<<29); got != 3_500_000_000 {
		t.Fatalf("got %d", got)
	}
}

// writeRaw writes raw IP packets as a nanosecond pcap ("pcap") or a
// pcapng file.
func writeRaw(t testing.TB, format string, pkts [][]byte, t0 time.Time) []byte {
	if format == "pcap" {
		return writePcap(t, LinkRaw, true, pkts, t0)
	}
	return writeNG(t, LinkRaw, 9, pkts, t0)
}

func TestDamageReported(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	pkts := [][]byte{ipv4(1), ipv4(2), ipv4(3)}
	for _, name := range []string{"pcap", "pcapng"} {
		full := writeRaw(t, name, pkts, t0)
		allPs, _, err := readAll(t, full)
		if err != nil {
			t.Fatal(err)
		}
		last := allPs[2].Offset
		// Truncated inside the last packet: two packets, damage at its offset.
		ps, _, err := readAll(t, full[:len(full)-5])
		d, ok := IsDamage(err)
		if !ok || len(ps) != 2 || d.Offset != last {
			t.Fatalf("%s truncated: %d packets, err %v (want damage at %d)", name, len(ps), err, last)
		}
		// Corrupt length field of the second packet.
		bad := bytes.Clone(full)
		off := allPs[1].Offset
		if name == "pcap" {
			binary.LittleEndian.PutUint32(bad[off+8:], 1<<30)
		} else {
			binary.LittleEndian.PutUint32(bad[off+4:], 13)
		}
		ps, _, err = readAll(t, bad)
		d, ok = IsDamage(err)
		if !ok || len(ps) != 1 || d.Offset != off {
			t.Fatalf("%s corrupt: %d packets, err %v (want damage at %d)", name, len(ps), err, off)
		}
	}
}

func FuzzReader(f *testing.F) {
	t0 := time.Unix(1700000000, 0)
	pkts := [][]byte{frame(LinkEthernet, ipv4(1), 1), frame(LinkEthernet, ipv6(2), 0)}
	f.Add(writePcap(f, LinkEthernet, false, pkts, t0))
	f.Add(writeNG(f, LinkEthernet, 9, pkts, t0))
	f.Add(writeNG(f, LinkSLL2, 6, pkts, t0))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		var offs []int64
		var end error
		for range 10000 {
			var p Packet
			err := r.Next(&p)
			if err != nil {
				if _, ok := IsDamage(err); !ok && !errors.Is(err, io.EOF) {
					t.Fatalf("unexpected error type %T: %v", err, err)
				}
				end = err
				break
			}
			if p.Offset < 0 || p.Offset >= int64(len(b)) {
				t.Fatalf("offset %d outside file of %d", p.Offset, len(b))
			}
			Network(p.LinkType, p.Data)
			offs = append(offs, p.Offset)
		}
		// In batches (the input in pieces): the same packets and end.
		r, _ = NewReader(iotest.HalfReader(bytes.NewReader(b)))
		var ps [5]Packet
		var got []int64
		for len(got) < len(offs) {
			n, err := r.NextBatch(ps[:])
			if n == 0 {
				if end == nil || err.Error() != end.Error() {
					t.Fatalf("batches end with %v after %d packets, one by one with %v after %d", err, len(got), end, len(offs))
				}
				return
			}
			for _, p := range ps[:n] {
				got = append(got, p.Offset)
			}
		}
		if !slices.Equal(got[:len(offs)], offs) {
			t.Fatalf("batches read packets at %v, one by one at %v", got, offs)
		}
	})
}

func FuzzNetwork(f *testing.F) {
	f.Add(uint16(LinkEthernet), frame(LinkEthernet, ipv4(1), 2))
	f.Add(uint16(LinkSLL), frame(LinkSLL, ipv6(1), 0))
	f.Add(uint16(LinkNull), frame(LinkNull, ipv4(1), 0))
	f.Fuzz(func(t *testing.T, link uint16, b []byte) {
		if ip := Network(LinkType(link), b); ip != nil && ip[0]>>4 != 4 && ip[0]>>4 != 6 {
			t.Fatalf("non-IP result %x", ip)
		}
	})
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, LinkRaw, 64)
	if err != nil {
		t.Fatal(err)
	}
	long := make([]byte, 100)
	long[0] = 0x45
	pkts := []struct {
		t    int64
		data []byte
	}{{1_700_000_000_123_456_789, []byte{0x45, 1, 2, 3}}, {1_700_000_001_000_000_001, long}}
	for _, p := range pkts {
		if err := w.Write(p.t, p.data, len(p.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range pkts {
		var p Packet
		if err := r.Next(&p); err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		n := min(len(want.data), 64)
		if p.TimeNs != want.t || !bytes.Equal(p.Data, want.data[:n]) || p.Length != len(want.data) || p.LinkType != LinkRaw {
			t.Errorf("packet %d: got t=%d len=%d orig=%d link=%d", i, p.TimeNs, len(p.Data), p.Length, p.LinkType)
		}
	}
	var p Packet
	if err := r.Next(&p); err != io.EOF {
		t.Errorf("after the last packet: %v, want EOF", err)
	}
}

func TestReadFile(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, LinkRaw, 64)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Write(int64(i+1)*1e9, []byte{0x45, byte(i)}, 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	whole, cut := filepath.Join(dir, "whole.pcap"), filepath.Join(dir, "cut.pcap")
	if err := os.WriteFile(whole, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, buf.Bytes()[:buf.Len()-1], 0o644); err != nil {
		t.Fatal(err)
	}
	var times []int64
	if err := ReadFile(whole, func(p *Packet) { times = append(times, p.TimeNs) }); err != nil || len(times) != 3 || times[2] != 3e9 {
		t.Fatalf("whole file: times %v, %v", times, err)
	}
	n := 0
	var damage *DamageError
	if err := ReadFile(cut, func(*Packet) { n++ }); !errors.As(err, &damage) || n != 2 || !strings.Contains(err.Error(), cut) {
		t.Fatalf("cut file: %d packets, %v; want 2 and the damage, naming the file", n, err)
	}
	if err := ReadFile(filepath.Join(dir, "missing"), func(*Packet) {}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestOutOfRangeReadOn: fields tshark reads past (a pcap fractional
// timestamp of a second or more, a pcapng if_tsresol finer than 64 bits
// resolve) are corrected with a note, not reported as damage.
func TestOutOfRangeReadOn(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	pkts := [][]byte{frame(LinkRaw, ipv4(1), 0), frame(LinkRaw, ipv4(2), 0), frame(LinkRaw, ipv4(3), 0)}
	for _, nanos := range []bool{false, true} {
		b := writePcap(t, LinkRaw, nanos, pkts, t0)
		// The second record's fractional field: 24-byte file header,
		// first record 16 + len, then sec, frac.
		off := 24 + 16 + len(pkts[0]) + 4
		frac, want := uint32(1_500_000), int64(1_500_000_000)
		if nanos {
			frac, want = 2_000_000_000, 2_000_000_000
		}
		binary.LittleEndian.PutUint32(b[off:], frac)
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var got []Packet
		for {
			var p Packet
			if err := r.Next(&p); err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("nanos %v: %v", nanos, err)
				}
				break
			}
			got = append(got, p)
		}
		if len(got) != 3 {
			t.Fatalf("nanos %v: read %d of 3 packets", nanos, len(got))
		}
		sec := int64(binary.LittleEndian.Uint32(b[off-4:]))
		if got[1].TimeNs != sec*1e9+want {
			t.Errorf("nanos %v: time %d, want %d (carried into the seconds)", nanos, got[1].TimeNs, sec*1e9+want)
		}
		if n := r.Notes(); len(n) != 1 || !strings.Contains(n[0], "1 times, first at byte") {
			t.Errorf("nanos %v: notes %q", nanos, n)
		}
	}

	b := writeNGMicro(LinkRaw, pkts, t0)
	i := bytes.Index(b, []byte{9, 0, 1, 0, 6, 0, 0, 0})
	for _, resol := range []byte{19, 0x80 | 100} {
		bad := bytes.Clone(b)
		for j := i; j >= 0 && j < len(bad); {
			bad[j+4] = resol
			k := bytes.Index(bad[j+8:], []byte{9, 0, 1, 0, 6, 0, 0, 0})
			if k < 0 {
				break
			}
			j += 8 + k
		}
		ps, _, err := readAll(t, bad)
		if err != nil || len(ps) != 3 {
			t.Fatalf("if_tsresol %#x: %d packets, err %v", resol, len(ps), err)
		}
		r, _ := NewReader(bytes.NewReader(bad))
		var p Packet
		for r.Next(&p) == nil {
		}
		if n := r.Notes(); len(n) != 1 || !strings.Contains(n[0], "if_tsresol") {
			t.Errorf("if_tsresol %#x: notes %q", resol, n)
		}
	}
}

// TestNextBatch reads captures packet by packet and in batches: the same
// packets, every batch's data intact until the next call (its records
// span several refills of the buffer, the input arriving in pieces), and
// the same damage at the end of a truncated file.
// sizedPackets returns n IPv4 packets of 0-899 bytes of payload each.
func sizedPackets(n int) [][]byte {
	var pkts [][]byte
	for i := range n {
		p := ipv4(byte(i))
		pkts = append(pkts, append(p, bytes.Repeat([]byte{byte(i * 7)}, i%900)...))
	}
	return pkts
}

func TestNextBatch(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	pkts := sizedPackets(3000)
	for _, name := range []string{"pcap", "pcapng"} {
		full := writeRaw(t, name, pkts, t0)
		for _, file := range [][]byte{full, full[:len(full)-5]} {
			want, nets, wantErr := readAll(t, file)
			r, err := NewReader(iotest.HalfReader(bytes.NewReader(file)))
			if err != nil {
				t.Fatal(err)
			}
			var got []Packet
			var ps [7]Packet
			var gotErr error
			for len(got) <= len(want) {
				n, err := r.NextBatch(ps[:])
				if n == 0 {
					gotErr = err
					break
				}
				if err != nil {
					t.Fatalf("%s: %d packets and error %v", name, n, err)
				}
				for _, p := range ps[:n] { // all read before any is kept
					p.Data = bytes.Clone(p.Data)
					got = append(got, p)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s (%d bytes): %d packets in batches, %d one by one", name, len(file), len(got), len(want))
			}
			for i := range want {
				if got[i].TimeNs != want[i].TimeNs || got[i].Offset != want[i].Offset || !bytes.Equal(Network(got[i].LinkType, got[i].Data), nets[i]) {
					t.Fatalf("%s: packet %d differs", name, i)
				}
			}
			if errors.Is(gotErr, io.EOF) {
				gotErr = nil // readAll's end
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("%s: batches end with %v, one by one with %v", name, gotErr, wantErr)
			}
		}
	}
}

// keepLease gives fresh buffers of size bytes and keeps every buffer put
// back with a copy of it as it was put: the reader must not write to a
// buffer after it has put it back.
type keepLease struct {
	size      int
	gets      int
	put, copy [][]byte
}

func (l *keepLease) Size() int   { return l.size }
func (l *keepLease) Get() []byte { l.gets++; return make([]byte, l.size) }
func (l *keepLease) Put(b []byte) {
	l.put = append(l.put, b)
	l.copy = append(l.copy, bytes.Clone(b))
}

// TestLease: with its buffers leased (SetLease), a reader's packets stay
// valid after it reads on (every packet is compared at the end, not
// copied as it came), they are those of a reader without a lease, in
// batches and one by one, pcap and pcapng, and no buffer is written once
// it was put back. A record larger than the lease's buffers is read into
// one of the reader's own.
func TestLease(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	pkts := sizedPackets(3000)
	pkts[1500] = append(ipv4(1), make([]byte, 9000)...) // larger than a leased buffer
	for _, name := range []string{"pcap", "pcapng"} {
		file := writeRaw(t, name, pkts, t0)
		want, nets, err := readAll(t, file)
		if err != nil {
			t.Fatal(err)
		}
		for _, batches := range []bool{false, true} {
			r, err := NewReader(iotest.HalfReader(bytes.NewReader(file)))
			if err != nil {
				t.Fatal(err)
			}
			l := &keepLease{size: 4 << 10}
			r.SetLease(l)
			var got []Packet
			var ps [7]Packet
			for {
				n := 1
				if batches {
					n, err = r.NextBatch(ps[:])
				} else {
					err = r.Next(&ps[0])
				}
				if err != nil {
					break
				}
				got = append(got, ps[:n]...)
			}
			if !errors.Is(err, io.EOF) || len(got) != len(want) {
				t.Fatalf("%s: %d packets and %v with a lease, %d without", name, len(got), err, len(want))
			}
			for i := range want {
				if got[i].TimeNs != want[i].TimeNs || !bytes.Equal(Network(got[i].LinkType, got[i].Data), nets[i]) {
					t.Fatalf("%s: packet %d differs with a lease (kept to the end)", name, i)
				}
			}
			if l.gets < len(file)/(4<<10) || len(l.put) < l.gets {
				t.Fatalf("%s: %d buffers got and %d put for %d bytes", name, l.gets, len(l.put), len(file))
			}
			for i, b := range l.put {
				if !bytes.Equal(b, l.copy[i]) {
					t.Fatalf("%s: buffer %d written after it was put back", name, i)
				}
			}
		}
	}
}
