package integration

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/sonde-project/sonde/internal/model"
)

// bulkBytes is how much payload a TCP connection must carry in one
// direction to count as a load stream in a capture; control requests and
// probes carry a few kB at most.
const bulkBytes = 1 << 20

// TestDSCPOnTheWire captures the veth in the server's namespace while a
// test runs, and checks the DSCP of the load streams' data packets in both
// directions: 46 (EF) with --dscp ef, 0 without.
func TestDSCPOnTheWire(t *testing.T) {
	tp := newTopo(t)
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("needs tcpdump (make test installs it via apt)")
	}
	port, _ := strconv.Atoi(serverPort)
	srv := startServer(t, tp.srv, "--addr", tp.srvIP+":"+serverPort)
	for _, c := range []struct {
		name  string
		flags []string
		want  uint8
	}{{"ef", []string{"--dscp", "ef"}, 46}, {"unmarked", nil, 0}} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "capture.pcap")
			// -Z root: tcpdump would otherwise drop to its own user and
			// fail to create the file; -s 128 keeps the headers only.
			cap := startProc(t, tp.srv, "tcpdump", "-i", tp.srvIf, "-w", file, "-s", "128", "-B", "8192",
				"-Z", "root", "-n", "-c", "5000000", "tcp port "+serverPort)
			cap.waitStderr(t, "listening on", 1, 10*time.Second)

			args := append([]string{srv.addr(), "-t", "1s", "--streams", "2"}, c.flags...)
			res, _ := runJSON(t, tp.cli, runTimeout, args...)
			cap.stop(syscall.SIGINT)
			t.Logf("tcpdump: %s", lastLines(cap.stderr.String(), 2))

			if int(c.want) != res.Config.DSCP {
				t.Errorf("config DSCP %d, want %d", res.Config.DSCP, c.want)
			}
			for _, d := range []struct {
				name string
				flow []int
			}{{"download", flowDSCPs(res.Download)}, {"upload", flowDSCPs(res.Upload)}} {
				for i, v := range d.flow { // i counts marks, not flows
					if v != int(c.want) {
						t.Errorf("%s flow %d: DSCP %d in the result, want %d", d.name, i, v, c.want)
					}
				}
			}

			st, err := readCapture(file, uint16(port))
			if err != nil {
				t.Fatal(err)
			}
			var toServer, fromServer int
			for k, f := range st {
				if f.bytes < bulkBytes {
					continue
				}
				if k.dst == uint16(port) {
					toServer++
				} else {
					fromServer++
				}
				for dscp, n := range f.dscp {
					if dscp != c.want {
						t.Errorf("%v: %d of %d data packets with DSCP %d, want all %d", k, n, f.packets, dscp, c.want)
					}
				}
				t.Logf("%v: %d data packets, %d bytes, DSCP %v", k, f.packets, f.bytes, f.dscp)
			}
			// Two download streams carry data from the server, two upload
			// streams to it.
			if toServer < 2 || fromServer < 2 {
				t.Errorf("capture has %d load streams to the server and %d from it, want at least 2 each", toServer, fromServer)
			}
		})
	}
}

// flowDSCPs lists the DSCP the result gives for each flow of d: the mark
// asked for and, where the receiver could read it, the mark it saw.
func flowDSCPs(d *model.DirectionResult) []int {
	if d == nil {
		return []int{-1}
	}
	var out []int
	for _, f := range d.Flows {
		out = append(out, f.DSCP)
		if f.ReceivedDSCP != nil {
			out = append(out, *f.ReceivedDSCP)
		}
	}
	return out
}

// lastLines returns the last n non-empty lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "; ")
}

// flowKey is one direction of a TCP connection on the server's address.
type flowKey struct {
	src, dst uint16
}

func (k flowKey) String() string { return fmt.Sprintf("%d→%d", k.src, k.dst) }

// flowStats counts one direction's data packets by DSCP.
type flowStats struct {
	packets int
	bytes   int64
	dscp    map[uint8]int
}

// readCapture reads a pcap of Ethernet frames and counts TCP data packets
// (payload > 0) per direction of every connection with the given port.
func readCapture(file string, port uint16) (map[flowKey]*flowStats, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", file, err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("capture %s: link type %v, want Ethernet", file, r.LinkType())
	}
	out := map[flowKey]*flowStats{}
	for range 10_000_000 {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", file, err)
		}
		pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Lazy)
		ip, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
		if ip == nil || tcp == nil {
			continue
		}
		src, dst := uint16(tcp.SrcPort), uint16(tcp.DstPort)
		if src != port && dst != port {
			continue
		}
		// The snap length cut the payload: its size comes from the IP
		// header (0 for a GSO super-packet over 64 KiB, counted as 64 KiB).
		payload := int(ip.Length) - int(ip.IHL)*4 - int(tcp.DataOffset)*4
		if ip.Length == 0 {
			payload = 65535
		}
		if payload <= 0 {
			continue
		}
		k := flowKey{src, dst}
		s := out[k]
		if s == nil {
			s = &flowStats{dscp: map[uint8]int{}}
			out[k] = s
		}
		s.packets++
		s.bytes += int64(payload)
		s.dscp[ip.TOS>>2]++
	}
	return out, nil
}
