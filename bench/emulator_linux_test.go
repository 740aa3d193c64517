// Benchmarks of sonde's link emulator (docs/emulator.md): TCP goodput through
// an unimpaired emulated link against a direct veth pair, the packet rate it
// forwards, the CPU it spends forwarding a 1 Gbit/s download (lan-20ms), and
// its delay error at 100 Mbit/s. Root only; run with
//
//	go test -run XXX -bench Emulator -benchtime 1x -v ./bench/
package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/netns"
)

type commander func(ctx context.Context, node, name string, args ...string) *exec.Cmd

// iperf3 runs one iperf3 test client → server and returns the parsed JSON
// end summary: receiver bit/s and, for UDP, packets.
func iperf3(b *testing.B, run commander, server string, seconds int, extra ...string) (bps float64, packets int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+30)*time.Second)
	defer cancel()
	srv := run(ctx, "server", "iperf3", "-s", "-1", "-B", server)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	out, err := run(ctx, "client", "iperf3", append([]string{"-c", server, "-t", strconv.Itoa(seconds), "-J"}, extra...)...).Output()
	if err != nil {
		b.Fatalf("iperf3: %v\n%s", err, out)
	}
	var res struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			Sum struct {
				BitsPerSecond float64 `json:"bits_per_second"`
				Packets       int     `json:"packets"`
				LostPackets   int     `json:"lost_packets"`
			} `json:"sum"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		b.Fatalf("iperf3 json: %v", err)
	}
	if res.End.SumReceived.BitsPerSecond > 0 {
		return res.End.SumReceived.BitsPerSecond, 0
	}
	return res.End.Sum.BitsPerSecond, res.End.Sum.Packets - res.End.Sum.LostPackets
}

func needRoot(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (CAP_NET_ADMIN) for namespaces and TUN devices")
	}
}

// vethGoodput is the TCP goodput between two namespaces joined by a veth
// pair: the kernel's own path, the reference.
func vethGoodput(b *testing.B, seconds int) float64 {
	nsA, err := netns.Add(netns.UniqueName("bva"))
	if err != nil {
		b.Fatal(err)
	}
	defer nsA.Delete()
	nsB, err := netns.Add(netns.UniqueName("bvb"))
	if err != nil {
		b.Fatal(err)
	}
	defer nsB.Delete()
	if err := netns.Veth(nsA, "va", "198.18.250.1/24", nsB, "vb", "198.18.250.2/24"); err != nil {
		b.Fatal(err)
	}
	run := func(ctx context.Context, node, name string, args ...string) *exec.Cmd {
		if node == "server" {
			return nsB.Command(ctx, name, args...)
		}
		return nsA.Command(ctx, name, args...)
	}
	bps, _ := iperf3(b, run, "198.18.250.2", seconds)
	return bps
}

func upLab(b *testing.B, s lab.Scenario, opts lab.Options) *lab.Lab {
	p, err := s.Parse()
	if err != nil {
		b.Fatal(err)
	}
	opts.StateDir = b.TempDir()
	l, err := lab.UpProfile(context.Background(), p, opts)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func BenchmarkEmulator(b *testing.B) {
	needRoot(b)
	const seconds = 5

	veth := vethGoodput(b, seconds)

	wire := upLab(b, lab.Scenario{Name: "wire", Links: []lab.ScenarioLink{{Both: "limit=10000p"}}}, lab.Options{})
	emu, _ := iperf3(b, wire.Command, wire.ServerAddr(), seconds)
	// Packet rate: 64-byte UDP payloads, offered as fast as iperf3 can.
	u0, _ := wire.Stats()[0].Up, 0
	start := time.Now()
	_, _ = iperf3(b, wire.Command, wire.ServerAddr(), seconds, "-u", "-b", "0", "-l", "64")
	u1 := wire.Stats()[0].Up
	pps := float64(u1.Delivered-u0.Delivered) / time.Since(start).Seconds()
	ppsPeak := float64(u1.Delivered-u0.Delivered) / float64(seconds)
	if err := wire.Down(); err != nil {
		b.Error(err)
	}

	// CPU cost at 1 Gbit/s: the lab runs inside this process (its
	// forwarding threads are this process's only busy threads; iperf3 runs
	// as child processes, which RUSAGE_SELF leaves out).
	lan, err := lab.Resolve("lan-20ms")
	if err != nil {
		b.Fatal(err)
	}
	opts := lab.Options{StateDir: b.TempDir()}
	ll, err := lab.UpProfile(context.Background(), lan, opts)
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := processCPU(b)
	t0 := time.Now()
	lanBps, _ := iperf3(b, ll.Command, ll.ServerAddr(), seconds, "-R", "-P", "2")
	lanCores := (processCPU(b) - cpu0).Seconds() / time.Since(t0).Seconds()
	if err := ll.Down(); err != nil {
		b.Error(err)
	}

	// Delay error at 100 Mbit/s under a saturating TCP flow: how late
	// each packet was written compared with the model's due time.
	truth := filepath.Join(b.TempDir(), "bench.gt")
	l := upLab(b, lab.Scenario{Name: "100M", Links: []lab.ScenarioLink{{Both: "rate=100Mbit delay=5ms limit=1000p"}}}, lab.Options{TruthPath: truth})
	rate100, _ := iperf3(b, l.Command, l.ServerAddr(), seconds, "-C", "reno", "-w", "4M")
	if err := l.Down(); err != nil {
		b.Error(err)
	}
	_, recs, err := emulator.ReadTruthFile(truth)
	if err != nil {
		b.Fatal(err)
	}
	var late []float64
	for _, rec := range recs {
		if rec.Fate == emulator.Delivered {
			late = append(late, float64(rec.Lateness())/1e3)
		}
	}
	sort.Float64s(late)
	q := func(p float64) float64 { return late[int(p*float64(len(late)-1))] }

	b.ReportMetric(emu/1e9, "Gbit/s-emulated")
	b.ReportMetric(veth/1e9, "Gbit/s-veth")
	b.ReportMetric(emu/veth, "ratio")
	b.ReportMetric(pps, "pps-udp64")
	b.ReportMetric(lanCores, "cores-lan20ms")
	b.ReportMetric(q(0.5), "µs-late-p50")
	b.ReportMetric(q(0.99), "µs-late-p99")
	b.Logf("TCP goodput: emulated %.0f Mbit/s, veth %.0f Mbit/s, ratio %.3f", emu/1e6, veth/1e6, emu/veth)
	b.Logf("UDP 64-byte packets forwarded: %.0f pps (%.0f over the iperf3 run time)", pps, ppsPeak)
	b.Logf("lan-20ms download, 2 streams: %.0f Mbit/s with the forwarder using %.2f cores (%.2f per Gbit/s)", lanBps/1e6, lanCores, lanCores/(lanBps/1e9))
	b.Logf("100 Mbit/s link, TCP at %.1f Mbit/s: delay error over %d packets p50 %.1f µs p99 %.1f µs p99.9 %.1f µs max %.1f µs",
		rate100/1e6, len(late), q(0.5), q(0.99), q(0.999), late[len(late)-1])
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
