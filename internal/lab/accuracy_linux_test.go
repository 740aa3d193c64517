package lab

import (
	"context"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
)

// readTruth flushes and reads a lab's ground truth.
func readTruth(t *testing.T, l *Lab, path string) []emulator.Record {
	t.Helper()
	if err := l.FlushTruth(); err != nil {
		t.Fatal(err)
	}
	_, recs, err := emulator.ReadTruthFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestAccuracyGoodput(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("long run")
	}
	const rate = 100e6
	l := upScenario(t, Scenario{Name: "goodput", Links: []ScenarioLink{{Both: "rate=100Mbit delay=5ms limit=1000p"}}}, Options{})
	// Reno: CUBIC's HyStart leaves slow start early and then grows so
	// slowly without loss that 8 s would measure CUBIC, not the link.
	got := iperf3(t, l, 8, false, "-O", "2", "-w", "4M", "-C", "reno")
	// 1500-byte IP packets carry 1448 bytes of TCP payload (20 IP + 20 TCP
	// + 12 timestamp option); TUN adds no link header.
	want := rate * 1448 / 1500
	t.Logf("TCP goodput %.2f Mbit/s, configured rate minus headers %.2f Mbit/s (ratio %.4f)", got/1e6, want/1e6, got/want)
	if math.Abs(got/want-1) > 0.03 {
		t.Fatalf("goodput %.2f Mbit/s not within 3%% of %.2f", got/1e6, want/1e6)
	}
}

func TestAccuracyLoss(t *testing.T) {
	needRoot(t)
	const n, p = 2000, 0.05
	truth := filepath.Join(t.TempDir(), "loss.gt")
	l := upScenario(t, Scenario{Name: "loss", Links: []ScenarioLink{{Both: "delay=1ms", Up: "loss=5%"}}}, Options{Seed: 99, TruthPath: truth})
	rtts := ping(t, l, n, "0.002", 56)
	lost := n - len(rtts)
	mu, sd := n*p, math.Sqrt(n*p*(1-p))
	lo, hi := mu-2.576*sd, mu+2.576*sd
	t.Logf("ping lost %d of %d with p = %.2f; 99%% binomial interval [%.1f, %.1f]", lost, n, p, lo, hi)
	if float64(lost) < lo || float64(lost) > hi {
		t.Fatalf("loss %d outside the 99%% interval", lost)
	}
	var truthLost int
	for _, r := range readTruth(t, l, truth) {
		if r.Fate == emulator.DropLoss && r.Proto == 1 {
			truthLost++
		}
	}
	if truthLost != lost {
		t.Fatalf("ground truth records %d losses, ping saw %d", truthLost, lost)
	}
}

// pingDuring measures ping RTTs from the client while fn's load runs.
func pingDuring(t *testing.T, l *Lab, load func(), count int, interval string) []float64 {
	t.Helper()
	done := make(chan []float64)
	go func() {
		time.Sleep(2 * time.Second) // let the queue fill
		done <- ping(t, l, count, interval, 56)
	}()
	load()
	return <-done
}

func TestAccuracyDropTailBufferDelay(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("long run")
	}
	// B = 62500 bytes at C = 10 Mbit/s: a full buffer adds 50 ms.
	const B, C = 62500, 10e6
	truth := filepath.Join(t.TempDir(), "dt.gt")
	l := upScenario(t, Scenario{Name: "droptail", Links: []ScenarioLink{{Both: "delay=5ms", Up: "rate=10Mbit limit=62500B"}}}, Options{TruthPath: truth})
	// An unresponsive UDP flow at 2× the rate keeps the buffer full.
	rtts := pingDuring(t, l, func() { iperf3(t, l, 6, false, "-u", "-b", "20M", "-l", "1400") }, 150, "0.02")
	want := B * 8 / C * 1000.0
	queued := pct(rtts, 0.5) - 10
	t.Logf("ping median %.2f ms under load: queueing %.2f ms, B×8/C = %.2f ms", pct(rtts, 0.5), queued, want)
	if math.Abs(queued-want)/want > 0.05 {
		t.Fatalf("queueing delay %.2f ms, want %.2f ± 5%%", queued, want)
	}
	var soj []float64
	for _, r := range readTruth(t, l, truth) {
		if r.Dir == emulator.Up && r.Fate == emulator.Delivered && r.Proto == 17 && r.Arrival > 2*time.Second && r.Arrival < 5*time.Second {
			soj = append(soj, r.Sojourn().Seconds()*1000)
		}
	}
	sort.Float64s(soj)
	t.Logf("ground-truth sojourn of the UDP flow: median %.2f ms", pct(soj, 0.5))
}

// tcpSojourn runs a saturating TCP upload through a 20 Mbit/s link with
// the given qdisc and returns the median sojourn (ms) of its data packets
// from the ground truth.
func tcpSojourn(t *testing.T, qdisc string) float64 {
	truth := filepath.Join(t.TempDir(), qdisc+".gt")
	l := upScenario(t, Scenario{Name: qdisc, Links: []ScenarioLink{{Both: "delay=10ms", Up: "rate=20Mbit limit=1000p qdisc=" + qdisc}}}, Options{TruthPath: truth})
	// -w: large socket buffers, so that the receive window never limits
	// the flow; Reno, so that it fills the buffer until loss (CUBIC's
	// HyStart stops short and then grows slowly).
	bps := iperf3(t, l, 8, false, "-w", "4M", "-C", "reno")
	var soj []float64
	for _, r := range readTruth(t, l, truth) {
		if r.Dir == emulator.Up && r.Fate == emulator.Delivered && r.Proto == 6 && r.Length > 1000 && r.Arrival > 3*time.Second {
			soj = append(soj, r.Sojourn().Seconds()*1000)
		}
	}
	sort.Float64s(soj)
	t.Logf("%s: goodput %.2f Mbit/s, sojourn median %.2f ms p90 %.2f ms (%d packets)", qdisc, bps/1e6, pct(soj, 0.5), pct(soj, 0.9), len(soj))
	return pct(soj, 0.5)
}

func TestAccuracyCoDelVersusDropTail(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("long run")
	}
	codel := tcpSojourn(t, "codel")
	droptail := tcpSojourn(t, "droptail")
	if codel > 10 {
		t.Errorf("codel median sojourn %.2f ms, want near the 5 ms target", codel)
	}
	if droptail < 100 {
		t.Errorf("drop-tail median sojourn %.2f ms, want a standing queue far above 5 ms", droptail)
	}
}

func TestAccuracyJitterAndOrder(t *testing.T) {
	needRoot(t)
	for _, reorder := range []bool{true, false} {
		truth := filepath.Join(t.TempDir(), "j.gt")
		spec := "delay=20ms jitter=5ms dist=normal"
		if reorder {
			spec += " reorder"
		}
		l := upScenario(t, Scenario{Name: "jitter", Links: []ScenarioLink{{Up: spec}}}, Options{TruthPath: truth})
		ping(t, l, 1000, "0.004", 56)
		var delays []float64
		var lastSeq uint64
		reordered := 0
		for _, r := range readTruth(t, l, truth) {
			if r.Dir != emulator.Up || r.Fate != emulator.Delivered {
				continue
			}
			delays = append(delays, float64(r.Due-r.Dequeue)/1e6)
			if r.Seq < lastSeq {
				reordered++
			}
			lastSeq = max(lastSeq, r.Seq)
		}
		var mean, sd float64
		for _, d := range delays {
			mean += d
		}
		mean /= float64(len(delays))
		for _, d := range delays {
			sd += (d - mean) * (d - mean)
		}
		sd = math.Sqrt(sd / float64(len(delays)-1))
		t.Logf("reorder=%v: %d packets, delay mean %.3f ms sd %.3f ms, %d delivered out of order", reorder, len(delays), mean, sd, reordered)
		if reorder {
			if math.Abs(mean-20) > 0.5 || math.Abs(sd-5)/5 > 0.1 {
				t.Errorf("recovered N(%.3f, %.3f), want N(20, 5)", mean, sd)
			}
			if reordered == 0 {
				t.Error("reorder asked, nothing reordered")
			}
		} else if reordered != 0 {
			t.Errorf("%d packets out of order on an order-preserving link", reordered)
		}
		if err := l.Down(); err != nil {
			t.Fatal(err)
		}
	}
}

var fragRe = regexp.MustCompile(`Frag needed and DF set \(mtu = (\d+)\)`)

func TestAccuracyPathMTU(t *testing.T) {
	needRoot(t)
	l := upScenario(t, Scenario{Name: "mtu", Links: []ScenarioLink{{Both: "delay=1ms mtu=1400"}}}, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := l.Command(ctx, Client, "ping", "-n", "-c", "2", "-M", "do", "-s", "1472", l.ServerAddr()).CombinedOutput()
	m := fragRe.FindStringSubmatch(string(out))
	if m == nil || m[1] != "1400" {
		t.Fatalf("no ICMP fragmentation needed with mtu 1400:\n%s", out)
	}
	// TCP then discovers the path MTU and still transfers.
	bps := iperf3(t, l, 2, false)
	if bps <= 0 || !strings.Contains(string(out), "198.18.1.254") {
		t.Fatalf("transfer after PMTUD: %.0f bit/s; ICMP source in %q", bps, out)
	}
	t.Logf("ICMP frag needed mtu=%s from the link; TCP across it %.1f Mbit/s", m[1], bps/1e6)
	_ = strconv.Itoa
}
