package emulator

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/checksum"
)

func TestTooBigIPv4(t *testing.T) {
	pkt := ipv4UDP(1500, 5000, 0, 77)
	icmp := TooBig(pkt, 1400, netip.MustParseAddr("198.18.1.254"))
	if icmp == nil {
		t.Fatal("no ICMP for a DF packet")
	}
	if checksum.Checksum(icmp[:20], 0) != 0 || checksum.Checksum(icmp[20:], 0) != 0 {
		t.Fatal("bad IP or ICMP checksum")
	}
	if icmp[20] != 3 || icmp[21] != 4 || binary.BigEndian.Uint16(icmp[26:28]) != 1400 {
		t.Fatalf("type %d code %d mtu %d", icmp[20], icmp[21], binary.BigEndian.Uint16(icmp[26:28]))
	}
	if !bytes.Equal(icmp[16:20], pkt[12:16]) || !bytes.Equal(icmp[28:48], pkt[:20]) {
		t.Fatal("ICMP not addressed to the sender or not quoting the header")
	}
	pkt[6] = 0 // clear DF
	if TooBig(pkt, 1400, netip.MustParseAddr("198.18.1.254")) != nil {
		t.Fatal("ICMP for a packet without DF")
	}
	// never an error about an error
	if TooBig(icmp, 100, netip.MustParseAddr("198.18.1.254")) != nil {
		t.Fatal("ICMP error about an ICMP error")
	}
}

func TestTooBigIPv6(t *testing.T) {
	pkt := make([]byte, 1500)
	pkt[0], pkt[6], pkt[7] = 0x60, 17, 64
	binary.BigEndian.PutUint16(pkt[4:6], 1460)
	src := netip.MustParseAddr("2001:db8::1").As16()
	copy(pkt[8:24], src[:])
	icmp := TooBig(pkt, 1280, netip.MustParseAddr("2001:db8::fe"))
	if icmp == nil || icmp[40] != 2 || binary.BigEndian.Uint32(icmp[44:48]) != 1280 || len(icmp) != 1280 {
		t.Fatalf("bad packet too big (len %d)", len(icmp))
	}
	var ph [40]byte
	copy(ph[0:32], icmp[8:40])
	binary.BigEndian.PutUint32(ph[32:36], uint32(len(icmp)-40))
	ph[39] = 58
	if checksum.Checksum(icmp[40:], checksum.Sum(ph[:], 0)) != 0 {
		t.Fatal("bad ICMPv6 checksum")
	}
}

func TestIdentityIgnoresTTLAndECN(t *testing.T) {
	a := ipv4UDP(200, 1, 2, 99)
	b := append([]byte(nil), a...)
	b[8] = 3 // TTL
	MarkCE(b)
	if PacketIdentity(a).Hash != PacketIdentity(b).Hash {
		t.Fatal("identity changed with TTL/ECN")
	}
	c := ipv4UDP(200, 1, 2, 100)
	if PacketIdentity(a).Hash == PacketIdentity(c).Hash {
		t.Fatal("different IP IDs, same identity")
	}
	if PacketIdentity(a).IPID != 99 {
		t.Fatal("ip id not extracted")
	}
}

func TestIdentityTCP(t *testing.T) {
	b := make([]byte, 20+32+10)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:4], uint16(len(b)))
	b[9] = 6
	tcp := b[20:]
	binary.BigEndian.PutUint32(tcp[4:8], 123456)
	tcp[12] = 8 << 4 // 32-byte header
	tcp[20], tcp[21] = 1, 1
	tcp[22], tcp[23] = 8, 10
	binary.BigEndian.PutUint32(tcp[24:28], 987654)
	id := PacketIdentity(b)
	if id.Flags&FlagTCP == 0 || id.TCPSeq != 123456 || id.Flags&FlagTSval == 0 || id.TSval != 987654 {
		t.Fatalf("identity %+v", id)
	}
}

func TestTruthRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	h := TruthHeader{StartUnixNs: 1234, Seed: 9, Profile: "adsl", Links: []TruthLink{{Name: "l1", Up: Params{RateBps: 7e5}}}}
	w, err := NewTruthWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	p := &Packet{Data: ipv4UDP(300, 1, 1, 5)}
	p.reset()
	p.Seq, p.Arrival, p.Dequeue, p.Due, p.Sent = 3, 10, 20, 30, 31
	p.QPackets, p.QBytes, p.Fate, p.Flags = 4, 5000, Delivered, FlagECT|FlagMarked
	want := NewRecord(p, 2, Down)
	w.Write(want)
	dropped := NewRecord(&Packet{Data: ipv4UDP(100, 1, 0, 6), Dequeue: -1, Due: -1, Sent: -1, Fate: DropLoss}, 0, Up)
	w.Write(dropped)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != truthFixedHead+len(mustJSON(t, h))+2*TruthRecordSize {
		t.Fatalf("file size %d", buf.Len())
	}
	r, err := NewTruthReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.StartUnixNs != 1234 || r.Header.Profile != "adsl" || r.Header.Links[0].Up.RateBps != 7e5 {
		t.Fatalf("header %+v", r.Header)
	}
	got, err := r.Next()
	if err != nil || got != want {
		t.Fatalf("record %+v, want %+v (%v)", got, want, err)
	}
	got, _ = r.Next()
	if got != dropped || got.Sent != -1 {
		t.Fatalf("dropped record %+v", got)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
	if want.Delay() != 21*time.Nanosecond || want.Sojourn() != 10 || want.Lateness() != 1 {
		t.Fatal("record helpers")
	}

	// The same file on disk, whole; then cut inside its last record.
	path := filepath.Join(t.TempDir(), "truth")
	var file bytes.Buffer
	fw, err := NewTruthWriter(&file, h)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(want)
	fw.Write(dropped)
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, recs, err := ReadTruthFile(path)
	if err != nil || fh.Profile != "adsl" || len(recs) != 2 || recs[0] != want || recs[1] != dropped {
		t.Fatalf("ReadTruthFile: header %+v, records %+v, %v", fh, recs, err)
	}
	if err := os.WriteFile(path, file.Bytes()[:file.Len()-5], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, recs, err := ReadTruthFile(path); !errors.Is(err, io.ErrUnexpectedEOF) || len(recs) != 1 {
		t.Fatalf("truncated file: %d records, error %v; want 1 and unexpected EOF", len(recs), err)
	}
	if _, _, err := ReadTruthFile(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func mustJSON(t *testing.T, h TruthHeader) []byte {
	var b bytes.Buffer
	w, err := NewTruthWriter(&b, h)
	if err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return b.Bytes()[truthFixedHead:]
}

func TestTruthReaderRejectsGarbage(t *testing.T) {
	if _, err := NewTruthReader(bytes.NewReader([]byte("not a truth file at all....."))); err == nil {
		t.Fatal("garbage accepted")
	}
}
