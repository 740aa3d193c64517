package capfilter

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/pcap"
)

// pkt describes a test packet.
type pkt struct {
	src, dst   string
	proto      int
	sport      int
	dport      int
	size       int  // payload bytes after the transport header
	options    bool // IPv4 header with 4 bytes of options
	fragOffset int  // IPv4: fragment offset (8-byte units); IPv6: a fragment header with it
}

func (p pkt) bytes() []byte {
	src, dst := netip.MustParseAddr(p.src), netip.MustParseAddr(p.dst)
	var l4 []byte
	switch p.proto {
	case 6:
		l4 = make([]byte, 20+p.size)
		l4[12] = 5 << 4
	case 17:
		l4 = make([]byte, 8+p.size)
		binary.BigEndian.PutUint16(l4[4:], uint16(len(l4)))
	case 132:
		l4 = make([]byte, 12+p.size)
	default:
		l4 = make([]byte, 8+p.size)
	}
	if p.proto == 6 || p.proto == 17 || p.proto == 132 {
		binary.BigEndian.PutUint16(l4[0:], uint16(p.sport))
		binary.BigEndian.PutUint16(l4[2:], uint16(p.dport))
	}
	if src.Is4() {
		hl := 20
		if p.options {
			hl = 24
		}
		b := make([]byte, hl+len(l4))
		b[0] = 0x40 | byte(hl/4)
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		binary.BigEndian.PutUint16(b[6:], uint16(p.fragOffset))
		b[8], b[9] = 64, byte(p.proto)
		copy(b[12:], src.AsSlice())
		copy(b[16:], dst.AsSlice())
		copy(b[hl:], l4)
		return b
	}
	next := byte(p.proto)
	var frag []byte
	if p.fragOffset >= 0 && p.fragOffset != noFrag6 {
		frag = make([]byte, 8)
		frag[0] = next
		binary.BigEndian.PutUint16(frag[2:], uint16(p.fragOffset<<3))
		next = 44
	}
	b := make([]byte, 40+len(frag)+len(l4))
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], uint16(len(b)-40))
	b[6], b[7] = next, 64
	copy(b[8:], src.AsSlice())
	copy(b[24:], dst.AsSlice())
	copy(b[40:], frag)
	copy(b[40+len(frag):], l4)
	return b
}

// noFrag6 marks an IPv6 packet without a fragment header.
const noFrag6 = -1

// corpus is a grid of packets over the fields the language reads.
func corpus() [][]byte {
	v4 := []string{"198.18.1.1", "198.18.1.2", "198.18.2.7", "10.0.0.1"}
	v6 := []string{"2001:db8::1", "2001:db8:1::2", "fe80::1"}
	protos := []int{6, 17, 132, 1, 58}
	ports := []int{22, 53, 80, 443, 1000, 5201, 8080}
	var out [][]byte
	i := 0
	for _, fam := range [][]string{v4, v6} {
		for si, s := range fam {
			for di, d := range fam {
				if si == di {
					continue
				}
				for _, proto := range protos {
					if (proto == 1) != (fam[0] == v4[0]) && (proto == 1 || proto == 58) {
						continue
					}
					for pi, sp := range ports {
						i++
						p := pkt{src: s, dst: d, proto: proto, sport: sp, dport: ports[(pi*3+si)%len(ports)],
							size: (i * 37) % 700, options: i%5 == 0, fragOffset: noFrag6}
						if fam[0] == v4[0] {
							p.fragOffset = 0
							if i%11 == 0 {
								p.fragOffset = 185
							}
						} else if i%7 == 0 {
							p.fragOffset = 0
						}
						out = append(out, p.bytes())
					}
				}
			}
		}
	}
	return out
}

var exprs = []string{
	"ip", "ip6", "tcp", "udp", "sctp", "icmp", "icmp6",
	"port 80", "tcp port 80", "udp port 53", "src port 443", "dst port 5201",
	"port 80 or 443", "tcp dst port 22 or 8080", "portrange 1000-6000", "udp portrange 50-500",
	"host 198.18.1.1", "src host 198.18.1.2", "dst 198.18.2.7", "src 2001:db8::1",
	"dst net 198.18.0.0/15", "net 198.18.2.0/24", "net 10.0.0.0/8 or net 2001:db8:1::/48",
	"host 2001:db8::1", "net 2001:db8::/32", "ip6 and tcp", "ip and not udp",
	"not tcp", "tcp and not port 22", "(tcp or udp) and host 198.18.1.1",
	"less 100", "greater 500", "ip proto 132", "ip6 proto 58", "ip6 proto 17",
	"udp and (port 53 or port 5201)", "! ip6 && (port 443 || icmp)", "tcp port https",
	"ip host 198.18.1.2 and tcp", "ip6 net fe80::/10", "ip net 0.0.0.0/0",
}

// TestAgainstTcpdump filters the corpus with each expression here and with
// tcpdump (libpcap's compiler) and compares the packets kept, one by one.
func TestAgainstTcpdump(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump not installed (make apt-deps installs it)")
	}
	pkts := corpus()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcap")
	if err := os.WriteFile(in, rawPcap(pkts), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, e := range exprs {
		f, err := Compile(e)
		if err != nil {
			t.Errorf("%q: %v", e, err)
			continue
		}
		var ours []int
		for i, p := range pkts {
			if f.Match(p) {
				ours = append(ours, i)
			}
		}
		out := filepath.Join(dir, "out.pcap")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		b, err := exec.CommandContext(ctx, tcpdump, "-r", in, "-w", out, e).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("tcpdump %q: %v\n%s", e, err, b)
		}
		theirs := packetIndexes(t, out)
		t.Logf("%-45q keeps %4d of %d (tcpdump %d)", e, len(ours), len(pkts), len(theirs))
		if !slices.Equal(ours, theirs) {
			t.Errorf("%q: sonde keeps %d packets, tcpdump %d; first difference at packet %d", e, len(ours), len(theirs), firstDiff(ours, theirs))
		} else if len(ours) == 0 || len(ours) == len(pkts) && e != "ip net 0.0.0.0/0" && !strings.HasPrefix(e, "net 0") {
			t.Errorf("%q keeps %d of %d packets: the corpus does not tell it apart", e, len(ours), len(pkts))
		}
	}
}

// rawPcap writes packets as a raw-IP pcap; packet i has timestamp i s.
func rawPcap(pkts [][]byte) []byte {
	var b bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 24)
	le.PutUint32(hdr, 0xa1b2c3d4)
	le.PutUint16(hdr[4:], 2)
	le.PutUint16(hdr[6:], 4)
	le.PutUint32(hdr[16:], 65535)
	le.PutUint32(hdr[20:], uint32(pcap.LinkRaw))
	b.Write(hdr)
	rec := make([]byte, 16)
	for i, p := range pkts {
		le.PutUint32(rec, uint32(i))
		le.PutUint32(rec[4:], 0)
		le.PutUint32(rec[8:], uint32(len(p)))
		le.PutUint32(rec[12:], uint32(len(p)))
		b.Write(rec)
		b.Write(p)
	}
	return b.Bytes()
}

func packetIndexes(t *testing.T, path string) []int {
	t.Helper()
	var idx []int
	if err := pcap.ReadFile(path, func(p *pcap.Packet) { idx = append(idx, int(p.TimeNs/1e9)) }); err != nil {
		t.Fatal(err)
	}
	return idx
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return min(a[i], b[i])
		}
	}
	if len(a) > len(b) {
		return a[len(b)]
	}
	if len(b) > len(a) {
		return b[len(a)]
	}
	return -1
}

func TestMatchBasics(t *testing.T) {
	syn := pkt{src: "198.18.1.1", dst: "198.18.1.2", proto: 6, sport: 40000, dport: 5201, fragOffset: 0}.bytes()
	cases := []struct {
		expr string
		want bool
	}{
		{"", true},
		{"tcp", true},
		{"udp", false},
		{"dst port 5201", true},
		{"src port 5201", false},
		{"port 5200 or 5201", true},
		{"not host 198.18.1.1", false},
		{"src 198.18.1.1 and dst 198.18.1.2", true},
		{"net 198.18.0.0/15", true},
		{"net 198.20.0.0/15", false},
		{"ip6", false},
		{"less 40", true},
		{"less 39", false},
		{"greater 41", false},
	}
	for _, c := range cases {
		f, err := Compile(c.expr)
		if err != nil {
			t.Fatalf("%q: %v", c.expr, err)
		}
		if got := f.Match(syn); got != c.want {
			t.Errorf("%q on a SYN 198.18.1.1:40000 → 198.18.1.2:5201: %v, want %v", c.expr, got, c.want)
		}
	}
	// A packet cut before its ports never matches a port primitive, and
	// nothing panics on empty input.
	f, _ := Compile("port 5201")
	if f.Match(syn[:21]) || f.Match(nil) {
		t.Error("port matched a packet without ports")
	}
}

func TestCompileErrors(t *testing.T) {
	for _, e := range []string{
		"tcp port", "port 70000", "host example.org", "host 198.18.1.1 and", "(tcp", "tcp)",
		"foo", "ether host 00:11:22:33:44:55", "portrange 10", "less x", "ip6 host 198.18.1.1",
		"src or dst host 198.18.1.1", "tcp or 80", "proto 300", "net 198.18.0.0/40", "&& tcp",
	} {
		f, err := Compile(e)
		if err == nil {
			t.Errorf("%q compiled (%d instructions)", e, len(f.Program()))
			continue
		}
		if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), e) {
			t.Errorf("%q: error %q should be one line naming the expression", e, err)
		}
	}
}

func TestTooLong(t *testing.T) {
	ports := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "port %d", 1000+i)
		}
		return b.String()
	}
	if _, err := Compile(ports(3)); err != nil {
		t.Fatalf("three ports: %v", err)
	}
	if _, err := Compile(ports(100)); err == nil || !strings.Contains(err.Error(), "8-bit jumps") {
		t.Fatalf("a hundred ports: %v, want the jump-length error", err)
	}
}

func FuzzCompile(f *testing.F) {
	for _, e := range exprs {
		f.Add(e, []byte{0x45, 0, 0, 40, 0, 0, 0, 0, 64, 6})
	}
	f.Fuzz(func(t *testing.T, expr string, pkt []byte) {
		fl, err := Compile(expr)
		if err != nil {
			return
		}
		fl.Match(pkt)
		if fl != nil && len(fl.Program()) == 0 {
			t.Fatal("empty program")
		}
	})
}
