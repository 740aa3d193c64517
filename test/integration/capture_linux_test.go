package integration

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
	"github.com/sonde-project/sonde/internal/pcap"
)

// sendUDP sends n datagrams from ns to addr:port with bash's /dev/udp,
// one every millisecond.
func sendUDP(t *testing.T, ns *netns.NS, addr string, port, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	script := fmt.Sprintf("for i in $(seq %d); do echo probe$i > /dev/udp/%s/%d; sleep 0.001; done", n, addr, port)
	if out, err := command(ctx, ns, "bash", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("send UDP: %v\n%s", err, out)
	}
}

// readUDPPorts returns the destination port of each packet of a raw-IP
// pcap (0 for packets that are not IPv4 UDP) and the packets' times.
func readUDPPorts(t *testing.T, file string) (ports []int, times []int64) {
	t.Helper()
	err := pcap.ReadFile(file, func(p *pcap.Packet) {
		ip := pcap.Network(p.LinkType, p.Data)
		port := 0
		if len(ip) >= 28 && ip[0]>>4 == 4 && ip[9] == 17 {
			port = int(binary.BigEndian.Uint16(ip[int(ip[0]&0xf)*4+2:]))
		}
		ports = append(ports, port)
		times = append(times, p.TimeNs)
	})
	if err != nil {
		t.Fatal(err)
	}
	return ports, times
}

// TestCaptureFilter captures on the server's veth with a filter while the
// client sends UDP to two ports and pings: the kernel passes exactly the
// datagrams to the filtered port, the file holds them with increasing
// kernel timestamps, and the analysis says what it applied.
func TestCaptureFilter(t *testing.T) {
	tp := newTopo(t)
	file := filepath.Join(t.TempDir(), "cap.pcap")
	const n = 100
	capt := startProc(t, tp.srv, "", "capture", "-i", tp.srvIf, "-c", fmt.Sprint(n), "-t", "60s", "-w", file, "--json", "-",
		"udp", "dst", "port", "9", "and", "src", "host", tp.cliIP)
	capt.waitStderr(t, "capturing on "+tp.srvIf, 1, 10*time.Second)
	sendUDP(t, tp.cli, tp.srvIP, 10, 30) // filtered out
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	out, err := command(ctx, tp.cli, "ping", "-c", "3", "-i", "0.05", tp.srvIP).CombinedOutput()
	cancel()
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	sendUDP(t, tp.cli, tp.srvIP, 9, n)
	select {
	case <-capt.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("capture did not stop after %d packets; stderr:\n%s", n, capt.stderr)
	}
	if capt.err != nil {
		t.Fatalf("capture: %v\n%s", capt.err, capt.stderr)
	}
	ports, times := readUDPPorts(t, file)
	if len(ports) != n {
		t.Fatalf("file holds %d packets, want %d", len(ports), n)
	}
	for i, p := range ports {
		if p != 9 {
			t.Fatalf("packet %d: destination port %d got through the filter", i, p)
		}
		if i > 0 && times[i] < times[i-1] {
			t.Fatalf("packet %d: timestamp goes back %d ns", i, times[i-1]-times[i])
		}
	}
	// One datagram a millisecond (plus bash's own time): kernel timestamps
	// keep that spacing; a span far off would mean stamps taken elsewhere.
	if span := time.Duration(times[n-1] - times[0]); span < (n-1)*time.Millisecond || span > 20*time.Second {
		t.Errorf("%d packets span %v", n, span)
	}
	var res model.Analysis
	if err := json.Unmarshal([]byte(capt.stdout.String()), &res); err != nil {
		t.Fatalf("capture --json: %v\n%s", err, capt.stdout)
	}
	if res.Packets != n || !strings.Contains(res.Filter, "dst port 9") || res.Live == nil || res.Live.Interface != tp.srvIf ||
		res.Live.KernelReceived < n || res.Live.KernelDropped != 0 {
		t.Errorf("analysis: %d packets, filter %q, live %+v", res.Packets, res.Filter, res.Live)
	}
}

// TestCaptureLoopbackOnce: on loopback the kernel shows every packet
// leaving and arriving; the capture keeps each once, as tcpdump does.
func TestCaptureLoopbackOnce(t *testing.T) {
	needRoot(t)
	ns, err := netns.Add(netns.UniqueName("cap"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	file := filepath.Join(t.TempDir(), "lo.pcap")
	capt := startProc(t, ns, "", "capture", "-i", "lo", "-t", "60s", "-w", file, "udp", "port", "9")
	capt.waitStderr(t, "capturing on lo", 1, 10*time.Second)
	const n = 40
	sendUDP(t, ns, "127.0.0.1", 9, n)
	// Let the last datagram reach the socket, then stop the capture as
	// Ctrl-C would: what was captured is written and reported.
	time.Sleep(200 * time.Millisecond)
	capt.stop(syscall.SIGINT)
	if ports, _ := readUDPPorts(t, file); len(ports) != n {
		t.Errorf("loopback capture holds %d packets for %d datagrams", len(ports), n)
	}
	if !strings.Contains(capt.stdout.String(), "kernel on lo:") {
		t.Errorf("no kernel counts in the summary:\n%s", capt.stdout)
	}
	if tshark, err := exec.LookPath("tshark"); err == nil {
		// The file must read in a peer tool too.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, tshark, "-r", file, "-T", "fields", "-e", "udp.dstport").Output()
		if err != nil || strings.Count(string(out), "9\n") != n {
			t.Errorf("tshark reads %q (%v), want %d datagrams to port 9", out, err, n)
		}
	}
}
