package iperf3

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
)

// TestSuiteICMP runs `sonde test iperf3://`'s suite from one namespace
// against Debian's iperf3 -s in another (198.18.201.0/24 on a veth pair),
// once with ping sockets allowed there (net.ipv4.ping_group_range) and
// once without them, where root falls back to a raw socket: both give
// ICMP RTTs for the baseline and each phase, and the result says which
// socket it used. The suite runs in a child process (this test binary,
// TestICMPHelper) so that all its sockets are in the client namespace.
func TestSuiteICMP(t *testing.T) {
	bin := needIperf3(t)
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	a, err := netns.Add(netns.UniqueName("i3a"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Delete() })
	b, err := netns.Add(netns.UniqueName("i3b"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Delete() })
	va, vb := a.Name(), b.Name() // unique, and short enough for links
	if err := a.IP("link", "add", va, "type", "veth", "peer", "name", vb, "netns", b.Name()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ns       *netns.NS
		dev, net string
	}{{a, va, "198.18.201.1/24"}, {b, vb, "198.18.201.2/24"}} {
		if err := c.ns.IP("addr", "add", c.net, "dev", c.dev); err != nil {
			t.Fatal(err)
		}
		if err := c.ns.IP("link", "set", c.dev, "up"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := b.Command(ctx, bin, "-s", "--forceflush", "-B", "198.18.201.2", "-p", DefaultPort)
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	listening := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				listening <- true
				break
			}
		}
		for sc.Scan() { // drain: iperf3 -s prints every test
		}
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("iperf3 -s did not start")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ pingRange, socket string }{{"0 0", "ping socket"}, {"1 0", "raw socket"}} {
		t.Run(strings.ReplaceAll(c.socket, " ", "-"), func(t *testing.T) {
			if err := a.Sysctl("net.ipv4.ping_group_range", c.pingRange); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "result.json")
			cmd := a.Command(ctx, self, "-test.run", "^TestICMPHelper$", "-test.count", "1")
			cmd.Env = append(os.Environ(), "SONDE_ICMP_HELPER_ADDR=198.18.201.2:"+DefaultPort, "SONDE_ICMP_HELPER_OUT="+file)
			if msg, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("suite in %s: %v\n%s", a.Name(), err, msg)
			}
			buf, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var res model.Result
			if err := json.Unmarshal(buf, &res); err != nil {
				t.Fatal(err)
			}
			if !hasNote(res.Notes, "ICMP echo RTTs from a "+c.socket) {
				t.Errorf("notes do not say the %s was used: %q", c.socket, res.Notes)
			}
			if !hasNote(res.Notes, "no one-way delays") || !hasNote(res.Notes, "no server TCP_INFO") {
				t.Errorf("notes do not say what an iperf3 server cannot give: %q", res.Notes)
			}
			checkICMP(t, "baseline", res.BaselineICMP, 10)
			for _, d := range []*model.DirectionResult{res.Download, res.Upload} {
				if d == nil {
					t.Fatal("a phase is missing")
				}
				checkICMP(t, d.Direction, d.ICMPLatency, 5)
				if d.Latency == nil || len(d.Latency.Samples) == 0 {
					t.Errorf("%s: the TCP-connect RTTs are gone", d.Direction)
				}
			}
		})
	}
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// checkICMP wants at least n answered echoes with RTTs a veth pair can
// give (above 0, below 200 ms even on a loaded machine).
func checkICMP(t *testing.T, what string, r *model.RTTResult, n int) {
	t.Helper()
	if r == nil || len(r.Samples) < n {
		t.Errorf("%s: ICMP %+v, want at least %d samples", what, r, n)
		return
	}
	for _, s := range r.Samples {
		if s.RTTMs <= 0 || s.RTTMs > 200 {
			t.Errorf("%s: ICMP RTT %v ms", what, s.RTTMs)
		}
	}
	t.Logf("%s: %d ICMP RTTs, median %.3f ms, %d lost", what, len(r.Samples), r.RTTMs.P50, r.Lost)
}

// TestICMPHelper is TestSuiteICMP's child: the suite against
// SONDE_ICMP_HELPER_ADDR, its result written to SONDE_ICMP_HELPER_OUT.
func TestICMPHelper(t *testing.T) {
	addr, file := os.Getenv("SONDE_ICMP_HELPER_ADDR"), os.Getenv("SONDE_ICMP_HELPER_OUT")
	if addr == "" || file == "" {
		t.Skip("the child of TestSuiteICMP")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Suite(ctx, SuiteConfig{Addr: addr, Duration: time.Second, Streams: 1, Software: "sonde/test"})
	if err != nil {
		t.Fatal(err)
	}
	buf, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf, 0o600); err != nil {
		t.Fatal(err)
	}
}
