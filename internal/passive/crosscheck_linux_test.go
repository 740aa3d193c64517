package passive

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/lab/labtest"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
)

// labCapture runs a lossy TCP upload through a lab link and returns a pcap
// (raw IP) of what the client's end of the link saw, extracted by tshark.
func labCapture(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (lab namespaces and TUN devices)")
	}
	for _, tool := range []string{"tshark", "iperf3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make apt-deps)", tool)
		}
	}
	l := labtest.OneLink(t, labtest.Options{Name: "xcheck", Seed: 7,
		Both: "rate=50Mbit delay=8ms limit=100000B", Up: "loss=0.5%"})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	srv := l.Command(ctx, lab.Server, "iperf3", "-s", "-1", "-B", l.ServerAddr())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	var out []byte
	var err error
	for try := 0; try < 3; try++ {
		time.Sleep(300 * time.Millisecond)
		if out, err = l.Command(ctx, lab.Client, "iperf3", "-c", l.ServerAddr(), "-t", "2").CombinedOutput(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("iperf3: %v\n%s", err, out)
	}
	ng := l.Capture()
	file := filepath.Join(t.TempDir(), "end-a.pcap")
	if o, err := exec.Command("tshark", "-r", ng, "-Y", "frame.interface_id==0", "-F", "pcap", "-w", file).CombinedOutput(); err != nil {
		t.Fatalf("tshark: %v\n%s", err, o)
	}
	return file
}

// tsharkFields runs tshark -T fields over the TCP packets of file.
func tsharkFields(t *testing.T, file string, fields ...string) [][]string {
	t.Helper()
	args := []string{"-r", file, "-Y", "tcp", "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	out, err := exec.Command("tshark", args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		rows = append(rows, strings.Split(line, "\t"))
	}
	return rows
}

// TestTSharkCrossCheck compares, on a real lossy capture, sonde's decoding
// of every TCP packet (absolute SEQ and ACK, TSval and TSecr, lengths) and
// its per-connection counters with tshark's, and the counters with
// tcptrace's where the definitions match (docs/analyze.md).
func TestTSharkCrossCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("lab run skipped in -short")
	}
	file := labCapture(t)
	if dir := os.Getenv("SONDE_XCHECK_KEEP"); dir != "" {
		// Keep the capture of a failing run for a look with tshark.
		t.Cleanup(func() {
			if t.Failed() {
				if b, err := os.ReadFile(file); err == nil {
					_ = os.WriteFile(filepath.Join(dir, "xcheck.pcap"), b, 0o644)
				}
			}
		})
	}

	// Per packet, in file order.
	rows := tsharkFields(t, file, "ip.src", "tcp.srcport", "tcp.seq_raw", "tcp.ack_raw",
		"tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr", "tcp.len", "ip.len")
	n, bad := 0, 0
	err := pcap.ReadFile(file, func(pk *pcap.Packet) {
		var ip ipPacket
		var s tcpSegment
		if !decodeIP(pcap.Network(pk.LinkType, pk.Data), &ip) || ip.proto != 6 || !decodeTCP(ip.l4, ip.l4Len, &s) {
			return
		}
		if n >= len(rows) {
			t.Fatalf("sonde decodes more TCP packets than tshark's %d", len(rows))
		}
		tsval, tsecr := "", ""
		if s.hasTS {
			tsval, tsecr = strconv.FormatUint(uint64(s.tsval), 10), strconv.FormatUint(uint64(s.tsecr), 10)
		}
		ack := strconv.FormatUint(uint64(s.ack), 10)
		if s.flags&flagACK == 0 {
			ack = rows[n][3] // tshark leaves tcp.ack_raw out without ACK
		}
		got := []string{addrPort(ip.src, s.sport), strconv.FormatUint(uint64(s.seq), 10), ack, tsval, tsecr,
			strconv.Itoa(s.payloadLen), strconv.Itoa(ip.length)}
		r := rows[n]
		want := []string{addrPort(addr16(t, r[0]), atou16(t, r[1])), r[2], r[3], r[4], r[5], r[6], r[7]}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			bad++
			if bad <= 5 {
				t.Errorf("packet %d: sonde %v, tshark %v", n+1, got, want)
			}
		}
		n++
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(rows) || n < 1000 {
		t.Fatalf("sonde decoded %d TCP packets, tshark %d (want ≥ 1000)", n, len(rows))
	}
	if bad > 0 {
		t.Fatalf("%d of %d packets differ", bad, n)
	}
	t.Logf("%d TCP packets: SEQ/ACK (raw), TSval/TSecr, TCP and IP lengths agree with tshark", n)

	// Per connection and direction.
	a := New(Config{Interface: -1})
	if _, err := a.ReadFile(file); err != nil {
		t.Fatal(err)
	}
	res := a.Finish(nil)
	type dirCount struct{ pkts, bytes, data, retrans, ooo uint64 }
	ts := map[string]*dirCount{}
	for _, r := range tsharkFields(t, file, "ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", "ip.len", "tcp.len",
		"tcp.analysis.retransmission", "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
		"tcp.analysis.out_of_order") {
		k := addrPort(addr16(t, r[0]), atou16(t, r[1])) + " > " + addrPort(addr16(t, r[2]), atou16(t, r[3]))
		c := ts[k]
		if c == nil {
			c = &dirCount{}
			ts[k] = c
		}
		c.pkts++
		c.bytes += uint64(atoi(t, r[4]))
		c.data += uint64(atoi(t, r[5]))
		// Data segments only, as tcptrace's "rexmt data pkts". tshark's
		// spurious retransmission is a first transmission of data the
		// receiver had already acknowledged: a capture written by two
		// threads can hold an ACK before the segment it acknowledges (by
		// µs). Neither sonde nor tcptrace has seen that data before: not a
		// retransmission.
		if atoi(t, r[5]) > 0 && (r[6] != "" || r[7] != "") && r[8] == "" {
			c.retrans++
		}
		if atoi(t, r[5]) > 0 && r[9] != "" {
			c.ooo++
		}
	}
	var retransSonde, retransTShark uint64
	for _, c := range res.TCP {
		for _, d := range []struct {
			name string
			st   model.TCPDir
		}{{c.A + " > " + c.B, c.AB}, {c.B + " > " + c.A, c.BA}} {
			w := ts[d.name]
			if w == nil {
				t.Errorf("%s: not in tshark's output", d.name)
				continue
			}
			t.Logf("%s: packets %d/%d, IP bytes %d/%d, data bytes %d/%d, retransmissions %d/%d, out of order %d/%d (sonde/tshark)",
				d.name, d.st.Packets, w.pkts, d.st.Bytes, w.bytes, d.st.DataBytes, w.data, d.st.Retransmissions, w.retrans, d.st.OutOfOrder, w.ooo)
			if d.st.Packets != w.pkts || d.st.Bytes != w.bytes || d.st.DataBytes != w.data {
				t.Errorf("%s: counters differ", d.name)
			}
			retransSonde += d.st.Retransmissions + d.st.OutOfOrder
			retransTShark += w.retrans + w.ooo
		}
	}
	// The lossy upload must show retransmissions. Both tools must find
	// the same data segments below the highest sequence seen; they split
	// them differently: tshark calls one "out of order" when it follows
	// the previous segment within its reordering window whatever the
	// sequence history, sonde only when it fills a hole younger than
	// min(3 ms, RTT/2) (docs/analyze.md). So the sums are compared.
	if retransTShark == 0 {
		t.Fatal("no retransmissions in a 0.5 % loss upload: the check is void")
	}
	if retransSonde != retransTShark {
		t.Errorf("retransmissions + out of order: sonde %d, tshark %d", retransSonde, retransTShark)
	}

	if _, err := exec.LookPath("tcptrace"); err != nil {
		t.Log("tcptrace not installed: its cross-check skipped (make apt-deps)")
		return
	}
	tt := tcptraceConns(t, file)
	for _, c := range res.TCP {
		for _, d := range []struct {
			name string
			st   model.TCPDir
		}{{c.A + " > " + c.B, c.AB}, {c.B + " > " + c.A, c.BA}} {
			w, ok := tt[d.name]
			if !ok {
				t.Errorf("%s: not in tcptrace's output", d.name)
				continue
			}
			t.Logf("%s: tcptrace packets %d, actual data bytes %d, unique bytes %d, rexmt data pkts %d; sonde %d, %d, %d, %d",
				d.name, w[0], w[1], w[2], w[3], d.st.Packets, d.st.DataBytes, d.st.UniqueBytes, d.st.Retransmissions)
			if d.st.Packets != w[0] || d.st.DataBytes != w[1] || d.st.UniqueBytes != w[2] || d.st.Retransmissions != w[3] {
				t.Errorf("%s: counters differ from tcptrace", d.name)
			}
		}
	}
}

var (
	ttConn  = regexp.MustCompile(`^TCP connection \d+:`)
	ttHost  = regexp.MustCompile(`^\s*host [a-z]+:\s+(\S+)$`)
	ttField = regexp.MustCompile(`^\s*(total packets|actual data bytes|unique bytes sent|rexmt data pkts):\s+(\d+)\s+(total packets|actual data bytes|unique bytes sent|rexmt data pkts):\s+(\d+)`)
)

// tcptraceConns parses tcptrace -l -n: per direction "A > B", total
// packets, actual data bytes, unique bytes sent, rexmt data pkts.
func tcptraceConns(t *testing.T, file string) map[string][4]uint64 {
	t.Helper()
	out, err := exec.Command("tcptrace", "-l", "-n", file).Output()
	if err != nil {
		t.Fatalf("tcptrace: %v", err)
	}
	res := map[string][4]uint64{}
	idx := map[string]int{"total packets": 0, "actual data bytes": 1, "unique bytes sent": 2, "rexmt data pkts": 3}
	var a, b string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if ttConn.MatchString(line) {
			a, b = "", ""
			continue
		}
		// Hosts are lettered a, b, then c, d for the next connection...;
		// IPv4 endpoints are written ADDR:PORT.
		if m := ttHost.FindStringSubmatch(line); m != nil {
			if a == "" {
				a = m[1]
			} else {
				b = m[1]
			}
			continue
		}
		if m := ttField.FindStringSubmatch(line); m != nil && a != "" && b != "" {
			ab, ba := res[a+" > "+b], res[b+" > "+a]
			ab[idx[m[1]]], _ = strconv.ParseUint(m[2], 10, 64)
			ba[idx[m[3]]], _ = strconv.ParseUint(m[4], 10, 64)
			res[a+" > "+b], res[b+" > "+a] = ab, ba
		}
	}
	return res
}

func addr16(t *testing.T, s string) [2]uint64 {
	t.Helper()
	var a [16]byte
	var ip [4]byte
	if _, err := fmt.Sscanf(s, "%d.%d.%d.%d", &ip[0], &ip[1], &ip[2], &ip[3]); err != nil {
		t.Fatalf("address %q: %v", s, err)
	}
	a[10], a[11] = 0xff, 0xff
	copy(a[12:], ip[:])
	return addrWords(&a)
}

func atou16(t *testing.T, s string) uint16 { return uint16(atoi(t, s)) }

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("number %q: %v", s, err)
	}
	return v
}

func addrWords(a *[16]byte) [2]uint64 {
	return [2]uint64{binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])}
}
