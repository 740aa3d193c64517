package passive

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
)

func udpPacket(src, dst [4]byte, sp, dp uint16, payload []byte) []byte {
	udp := make([]byte, 8, 8+len(payload))
	binary.BigEndian.PutUint16(udp, sp)
	binary.BigEndian.PutUint16(udp[2:], dp)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	return ipHeader(src, dst, 17, 1, append(udp, payload...))
}

// longHeader is a QUIC long-header packet of the given version (bytes
// after the version as an Initial: CIDs, token length, length), padded to
// size.
func longHeader(version []byte, size int) []byte {
	b := append([]byte{0xc0}, version...)
	b = append(b, 8, 1, 2, 3, 4, 5, 6, 7, 8, 4, 9, 9, 9, 9, 0, 0x40, 0)
	return append(b, make([]byte, max(size-len(b), 0))...)
}

func notesWith(r *model.Analysis, s string) []string {
	var out []string
	for _, n := range r.Notes {
		if strings.Contains(n, s) {
			out = append(out, n)
		}
	}
	return out
}

// TestQUICOnAnyPort: QUIC is found by its long header's version on ports
// that are not configured; versions sonde does not read are listed with
// the reason, and UDP that is not QUIC is noted, not silently dropped.
func TestQUICOnAnyPort(t *testing.T) {
	a := New(Config{Interface: -1})
	short := append([]byte{0x40}, make([]byte, 40)...)
	flows := []struct {
		port    uint16
		version []byte
	}{
		{4433, []byte{0, 0, 0, 1}},           // v1
		{4443, []byte{0xff, 0, 0, 27}},       // draft-27
		{6121, []byte{'Q', '0', '4', '6'}},   // Google QUIC
		{12345, []byte{0xfa, 0xce, 0xb0, 2}}, // mvfst
		{8443, []byte{0x12, 0x34, 0x56, 0x78}},
	}
	var tm int64
	for i, f := range flows {
		cli := [4]byte{198, 18, 0, byte(10 + i)}
		a.Packet(tm, udpPacket(cli, serverIP, 50000, f.port, longHeader(f.version, 1200)))
		for k := range 5 {
			tm += 1e6
			a.Packet(tm, udpPacket(serverIP, cli, f.port, 50000, short))
			a.Packet(tm, udpPacket(cli, serverIP, 50000, f.port, short[:10+k]))
		}
	}
	// Not QUIC: DNS, and RTP (first byte 0x80, no fixed bit).
	for k := range 4 {
		a.Packet(tm, udpPacket(clientIP, serverIP, 40000, 53, []byte{0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}))
		a.Packet(tm, udpPacket(clientIP, serverIP, 40002, 5004, append([]byte{0x80, 0x60, 0, byte(k)}, make([]byte, 1300)...)))
	}
	r := a.Finish(nil)
	if len(r.QUIC) != len(flows) {
		t.Fatalf("%d QUIC flows, want %d: %+v", len(r.QUIC), len(flows), r.QUIC)
	}
	want := map[string]string{"v1": "unknown", "draft-27": "not-analysed", "gquic-Q046": "not-analysed",
		"mvfst-0xfaceb002": "not-analysed", "0x12345678 (unknown)": "unknown"}
	for _, q := range r.QUIC {
		if st, ok := want[q.Version]; !ok || q.Spin != st || q.Packets != [2]uint64{6, 5} || !strings.HasPrefix(q.Client, "198.18.0.") {
			t.Errorf("flow %s > %s: version %q spin %q packets %v", q.Client, q.Server, q.Version, q.Spin, q.Packets)
		}
	}
	for _, v := range []string{"draft-27", "gquic-Q046", "mvfst-0xfaceb002"} {
		if n := notesWith(r, "QUIC "+v+": 1 flows, 11 packets not analysed"); len(n) != 1 {
			t.Errorf("no note for %s: %q", v, r.Notes)
		}
	}
	// A version sonde does not know is read by the invariants (quicinv.go).
	if n := notesWith(r, "QUIC 0x12345678 (unknown): 1 flows, 11 packets of a version sonde does not know"); len(n) != 1 {
		t.Errorf("no note for 0x12345678: %q", r.Notes)
	}
	if n := notesWith(r, "8 UDP packets not analysed"); len(n) != 1 || !strings.Contains(n[0], "53 (4)") || !strings.Contains(n[0], "5004 (4)") {
		t.Errorf("UDP note: %q", r.Notes)
	}
	if r.Skipped != 8 {
		t.Errorf("%d skipped, want 8", r.Skipped)
	}
}

func writePcap(t *testing.T, link pcap.LinkType, frames ...[]byte) []byte {
	var b bytes.Buffer
	w, err := pcap.NewWriter(&b, link, 65535)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.Write(int64(i+1)*1e6, f, len(f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestLinkTypesAndInterface: PPP is read; an unsupported link type and an
// interface index with no packets are reported with their reason.
func TestLinkTypesAndInterface(t *testing.T) {
	seg := ipHeader(clientIP, serverIP, 6, 1, tcpSeg(40000, 80, 1, 0, flagSYN, 1, 0, 0))
	ppp := append([]byte{0xff, 0x03, 0x00, 0x21}, seg...)
	a := New(Config{Interface: -1})
	if _, err := a.Read(bytes.NewReader(writePcap(t, pcap.LinkPPP, ppp, ppp)), model.CaptureFile{Path: "ppp"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(bytes.NewReader(writePcap(t, 105, seg, seg, seg)), model.CaptureFile{Path: "wifi"}); err != nil {
		t.Fatal(err)
	}
	r := a.Finish(nil)
	if len(r.TCP) != 1 || r.TCP[0].AB.Packets != 2 {
		t.Errorf("PPP: %+v", r.TCP)
	}
	if n := notesWith(r, "3 packets not analysed: link type IEEE802_11 (105) is not supported"); len(n) != 1 || r.Skipped != 3 {
		t.Errorf("skipped %d, notes %q", r.Skipped, r.Notes)
	}

	a = New(Config{Interface: 2})
	if _, err := a.Read(bytes.NewReader(writePcap(t, pcap.LinkRaw, seg)), model.CaptureFile{Path: "one.pcap"}); err != nil {
		t.Fatal(err)
	}
	r = a.Finish(nil)
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "one.pcap: no packet on interface 2 (--interface): the file's 1 packets are on interfaces 0-0") {
		t.Errorf("errors %q", r.Errors)
	}
}

// TestIPv4TotalLengthZero: a segmentation-offload capture's IPv4 header
// has total length 0; the frame's length is taken (as tshark does).
func TestIPv4TotalLengthZero(t *testing.T) {
	seg := ipHeader(clientIP, serverIP, 6, 1, tcpSeg(40000, 80, 1, 0, flagACK, 1, 0, 70000-52))
	binary.BigEndian.PutUint16(seg[2:], 0)
	a := New(Config{Interface: -1})
	a.Packet(0, seg)
	r := a.Finish(nil)
	if r.Skipped != 0 || len(r.TCP) != 1 || r.TCP[0].AB.DataBytes != 70000-52 {
		t.Fatalf("skipped %d, %+v", r.Skipped, r.TCP)
	}
}
