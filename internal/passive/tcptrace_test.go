package passive

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/sonde-project/sonde/internal/pcap"
)

// ttCase is a one-connection capture built for the tcptrace comparison:
// server→client data with the oddity under test, then FIN+FIN+ACK.
type ttCase struct {
	name string
	// differs names the counters where sonde's definition differs
	// (docs/analyze.md): they are logged, not compared.
	differs map[string]bool
	// data adds the server's segments after the handshake: seg(ms, seq
	// offset, length, window advertised by the client's ACK after it).
	data func(seg func(ms float64, off uint32, n int, ackWin uint16))
}

var ttCases = []ttCase{
	{"in order", nil, func(seg func(float64, uint32, int, uint16)) {
		for i := range 6 {
			seg(float64(10+i), uint32(i)*1000, 1000, 65535)
		}
	}},
	{"zero-window probes", nil, func(seg func(float64, uint32, int, uint16)) {
		seg(10, 0, 1000, 65535)
		seg(11, 1000, 1000, 0) // the client's window closes
		seg(50, 2000, 1, 0)    // probe with the next new byte
		seg(100, 2000, 1, 0)   // the same probe again
		seg(200, 2000, 1, 0)
		seg(300, 2000, 1, 65535) // the window opens
		seg(301, 2000, 1000, 65535)
	}},
	{"overlapping retransmissions", nil, func(seg func(float64, uint32, int, uint16)) {
		seg(10, 0, 1000, 65535)
		seg(11, 1000, 1000, 65535)
		seg(12, 500, 1000, 65535)  // all old
		seg(13, 1500, 1000, 65535) // half old, half new
		seg(14, 2500, 1000, 65535)
		seg(15, 2000, 2000, 65535) // old and new again
	}},
	{"reordering", nil, func(seg func(float64, uint32, int, uint16)) {
		seg(10, 0, 1000, 65535)
		seg(11, 2000, 1000, 65535) // 1000-2000 overtaken
		seg(11.5, 1000, 1000, 65535)
		seg(12, 3000, 1000, 65535)
		seg(13, 5000, 1000, 65535)
		seg(13.2, 4000, 1000, 65535)
	}},
	// A hole filled 40 ms later: the retransmission of a segment lost
	// before the observer for sonde, out of order for tcptrace.
	{"late hole fill", map[string]bool{"rexmt data pkts": true, "outoforder pkts": true}, func(seg func(float64, uint32, int, uint16)) {
		seg(10, 0, 1000, 65535)
		seg(11, 2000, 1000, 65535)
		seg(12, 3000, 1000, 65535)
		seg(51, 1000, 1000, 65535)
	}},
}

// write builds the case's capture (Ethernet, as tcptrace reads it).
func (c ttCase) write(t *testing.T, path string) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkEthernet, 65535)
	if err != nil {
		t.Fatal(err)
	}
	var id uint16
	add := func(ms float64, up bool, seq, ack uint32, flags uint8, n int, win uint16) {
		id++
		src, dst, sp, dp := clientIP, serverIP, uint16(40000), uint16(80)
		if !up {
			src, dst, sp, dp = dst, src, dp, sp
		}
		seg := tcpSeg(sp, dp, seq, ack, flags, uint32(ms)+1, 0, n)
		seg[14], seg[15] = byte(win>>8), byte(win)
		eth := append(make([]byte, 12, 14+20+len(seg)), 0x08, 0x00)
		if err := w.Write(int64(ms*1e6), append(eth, ipHeader(src, dst, 6, id, seg)...), 0); err != nil {
			t.Fatal(err)
		}
	}
	const cISN, sISN = 1000, 5000
	add(0, true, cISN, 0, flagSYN, 0, 65535)
	add(1, false, sISN, cISN+1, flagSYN|flagACK, 0, 65535)
	add(2, true, cISN+1, sISN+1, flagACK, 0, 65535)
	var high uint32
	last := 2.0
	c.data(func(ms float64, off uint32, n int, ackWin uint16) {
		add(ms, false, sISN+1+off, cISN+1, flagACK, n, 65535)
		if end := off + uint32(n); end > high {
			high = end
		}
		add(ms+0.1, true, cISN+1, sISN+1+high, flagACK, 0, ackWin)
		last = ms
	})
	add(last+5, false, sISN+1+high, cISN+1, flagFIN|flagACK, 0, 65535)
	add(last+6, true, cISN+1, sISN+2+high, flagFIN|flagACK, 0, 65535)
	add(last+7, false, sISN+2+high, cISN+2, flagACK, 0, 65535)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

var ttCount = regexp.MustCompile(`^\s+(rexmt data pkts|outoforder pkts|zwnd probe pkts|actual data pkts|unique bytes sent):\s+(\d+)\s+(rexmt data pkts|outoforder pkts|zwnd probe pkts|actual data pkts|unique bytes sent):\s+(\d+)`)

// tcptraceBA runs tcptrace -l -r -n and returns the server→client (b2a)
// counters of the only connection.
func tcptraceBA(t *testing.T, file string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command("tcptrace", "-l", "-r", "-n", file).Output()
	if err != nil {
		t.Fatalf("tcptrace: %v", err)
	}
	res := map[string]uint64{}
	for _, line := range bytes.Split(out, []byte("\n")) {
		if m := ttCount.FindStringSubmatch(string(line)); m != nil {
			res[m[3]], _ = strconv.ParseUint(m[4], 10, 64)
		}
	}
	return res
}

func TestTcptraceCounterCases(t *testing.T) {
	if _, err := exec.LookPath("tcptrace"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tcptrace not installed (make apt-deps): the comparison must run in CI")
		}
		t.Skip("tcptrace not installed (make apt-deps): comparison skipped")
	}
	dir := t.TempDir()
	for _, c := range ttCases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, "c.pcap")
			c.write(t, file)
			tt := tcptraceBA(t, file)
			a := New(Config{Interface: -1})
			if _, err := a.ReadFile(file); err != nil {
				t.Fatal(err)
			}
			r := a.Finish(nil)
			if len(r.TCP) != 1 {
				t.Fatalf("%d connections", len(r.TCP))
			}
			ba := r.TCP[0].BA
			got := map[string]uint64{"actual data pkts": ba.DataPackets, "unique bytes sent": ba.UniqueBytes,
				"rexmt data pkts": ba.Retransmissions, "outoforder pkts": ba.OutOfOrder, "zwnd probe pkts": ba.ZeroWindowProbes}
			for k, v := range got {
				w, ok := tt[k]
				switch {
				case !ok:
					t.Errorf("%s: not in tcptrace's output", k)
				case c.differs[k]:
					t.Logf("%s: tcptrace %d, sonde %d (definitions differ)", k, w, v)
				case w != v:
					t.Errorf("%s: tcptrace %d, sonde %d", k, w, v)
				}
			}
		})
	}
}
