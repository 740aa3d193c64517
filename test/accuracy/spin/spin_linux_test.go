// Package spin holds the lab accuracy tests of sonde analyze's QUIC spin-bit
// RTT estimator: bulk QUIC transfers between sonde-quic endpoints (quinn,
// spin always on) through emulated links, a pcapng capture at the link's
// ends, and every spin sample compared with the emulator's per-packet ground
// truth (docs/analyze.md, "Ground truth"). It also cross-checks the QUIC
// header parser against tshark on the same capture.
//
// The tests need root (namespaces, TUN devices) and bin/sonde-quic (make
// build; needs cargo) and skip with the reason otherwise. The full grid of
// bandwidths and RTTs is bench/spin_accuracy.sh; these tests run a small
// grid that spans it.
package spin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/lab/labtest"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
)

// point is one link of the grid: rate in Mbit/s, base RTT in ms, and how
// long the transfer runs.
type point struct {
	mbit, rttMs int
	seconds     int
	// seeds: run this many transfers one after the other, client seeds
	// 1..seeds (0: one), against one server.
	seeds int
	// tcp: also run an iperf3 upload of this many seconds in the same
	// lab after the QUIC transfer (bench: TCP timestamp column).
	tcp int
}

// Bounds in percent. The truth is the network RTT; the endpoint's time
// from receiving an edge to sending the next packet (which carries the
// reflected edge) is outside every link and counts as error. The median
// |e| must meet the goal plus, as in the TCP accuracy test, an
// endpoint allowance over the base RTT (twice for full samples, which hold
// both endpoints' times). So is the mean in uploads; in downloads it is
// held to meanBoundPct only: the sender now and then waits 10-200 ms
// before reflecting an edge and one such sample in a run of 10-100 moves
// the mean by 1-2 %. The server-side capture shows the server silent
// meanwhile: quinn 0.11 sends no packet at all, not even an ACK, while its
// congestion window holds back pending stream data (see docs/analyze.md),
// and the bottleneck queue between it and this observer hides the silence.
// --prompt-acks removes the receiver's delayed ACKs (before it, full
// samples were 5-6 % high).
const (
	goalPct           = 0.5
	endpointAllowance = 150 * time.Microsecond
	meanBoundPct      = 4
	// labHealthy: below this fraction of the link rate the lab is
	// starved of CPU (seen at load average 10-13 on the 2-core VM).
	labHealthy = 0.6
)

// quicBin is bin/sonde-quic at the repository root, or $SONDE_QUIC_BIN.
func quicBin(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(cmp.Or(os.Getenv("SONDE_QUIC_BIN"), "../../../bin/sonde-quic"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s missing: run make build (needs cargo) to build the QUIC endpoint", p)
	}
	return p
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
}

// TestSpinRTTAccuracy runs bulk QUIC transfers both ways through a small
// grid of links and checks, at the client-side observer, that the
// spin-bit methods have valid samples at every point and that the
// server-side component (observer → server → observer: the whole network
// RTT there) and the full RTT are within the bounds. The endpoints run
// with --prompt-acks and --no-gso (sonde-quic --help).
//
// Uploads (the client sends, as in the TCP accuracy test) are held to the
// issue's goal on the mean. In downloads the sender sits behind the
// bottleneck: when its congestion window holds it back it reflects an edge
// 10-200 ms late and the queue hides its silence from this observer, so
// one such sample in a run moves the mean by 1-2 %: there only the median
// is held to the goal (see bench/spin_accuracy.sh and docs/analyze.md).
func TestSpinRTTAccuracy(t *testing.T) {
	needRoot(t)
	bin := quicBin(t)
	if testing.Short() {
		t.Skip("lab runs skipped in -short")
	}
	grid := []point{{mbit: 5, rttMs: 16, seconds: 4}, {mbit: 50, rttMs: 64, seconds: 4}, {mbit: 200, rttMs: 32, seconds: 4}, {mbit: 20, rttMs: 600, seconds: 8}}
	for _, p := range grid {
		for _, dir := range []string{"up", "down"} {
			t.Run(fmt.Sprintf("%dMbit-%dms-%s", p.mbit, p.rttMs, dir), func(t *testing.T) {
				checkSpinPoint(t, bin, p, dir)
			})
		}
	}
}

func checkSpinPoint(t *testing.T, bin string, p point, dir string) {
	capFile, truthFile, goodput := runQUIC(t, bin, p, dir)
	if ratio := goodput / (float64(p.mbit) * 1e6); ratio < labHealthy {
		// The forwarder did not get the CPU to carry the configured
		// rate: its timing, not the analyser's, is what such a run
		// would measure.
		t.Skipf("lab overloaded: the transfer got %.1f of %d Mbit/s (%.0f %% < %.0f %%); rerun on a less loaded machine",
			goodput/1e6, p.mbit, 100*ratio, 100*labHealthy)
	}
	res := analyze(t, capFile, truthFile, 0, 'A')
	if len(res.QUIC) != 1 {
		t.Fatalf("%d QUIC flows in the capture, want 1", len(res.QUIC))
	}
	q := res.QUIC[0]
	t.Logf("flow: spin %s, version %s, edges %v, glitches %v, rejected %v", q.Spin, q.Version, q.Edges, q.Glitches, q.Rejected)
	if q.Spin != "spinning" {
		t.Fatalf("flow classified %q, want spinning", q.Spin)
	}
	for _, name := range []string{"spin-side-server", "spin-full-up", "spin-full-down"} {
		m := res.Truth.Method(name)
		// A full sample also holds the client's time to reflect (truth 0
		// at this observer): two endpoints.
		endpoints := 1.0
		if name != "spin-side-server" {
			endpoints = 2
		}
		bound := goalPct + endpoints*100*endpointAllowance.Seconds()*1000/float64(p.rttMs)
		meanBound := float64(meanBoundPct)
		if dir == "up" {
			meanBound = bound
		}
		t.Logf("%-16s samples %4d matched %4d dropped %d mean|e| %.3f%% median %.3f%% p90 %.3f%% p99 %.3f%% max %.2f%% bias %+.3f%% %.1f samples/s (bounds: median %.3f%%, mean %.3f%%)",
			name, m.Samples, m.Matched, m.Dropped, m.MeanAbsPct, m.MedianPct, m.P90Pct, m.P99Pct, m.MaxPct, m.MeanSignedPct, m.SamplesPerS, bound, meanBound)
		if m.Matched < 3 || float64(m.Matched) < 0.9*float64(m.Samples) {
			t.Errorf("%s: %d valid samples (%d with a packet the path dropped), %d matched with the truth: want ≥ 3 and ≥ 90 %%",
				name, m.Samples, m.Dropped, m.Matched)
			continue
		}
		if m.MedianPct > bound {
			t.Errorf("%s: median |e| %.3f%% > bound %.3f%%", name, m.MedianPct, bound)
		}
		if m.MeanAbsPct > meanBound {
			t.Errorf("%s: mean |e| %.3f%% > %.3f%%", name, m.MeanAbsPct, meanBound)
		}
	}
}

// TestSpinAlwaysOn runs eight 1-s downloads with client seeds 1-8 against
// one server (a fresh endpoint per connection) and checks that every flow
// spins. quinn alone disables spin on about 1 connection in 8 per endpoint
// (sending random values), so without sonde-quic's seed choice the 16
// endpoint decisions would all come out "on" about 12 % of the time.
func TestSpinAlwaysOn(t *testing.T) {
	needRoot(t)
	bin := quicBin(t)
	if testing.Short() {
		t.Skip("lab runs skipped in -short")
	}
	capFile, truthFile, _ := runQUIC(t, bin, point{mbit: 20, rttMs: 32, seconds: 1, seeds: 8}, "down")
	res := analyze(t, capFile, truthFile, 0, 'A')
	if len(res.QUIC) != 8 {
		t.Fatalf("%d QUIC flows, want 8", len(res.QUIC))
	}
	for _, q := range res.QUIC {
		t.Logf("%s: %s, edges %v, glitches %v, short-header packets %v", q.Client, q.Spin, q.Edges, q.Glitches, q.Short)
		// 1 s at ≥ 32 ms RTT: at most ~30 edges per direction; random
		// values would flip on about half the packets.
		if q.Spin != "spinning" || q.Edges[0] < 5 || q.Edges[0] > 60 || q.Edges[1] < 5 || q.Edges[1] > 60 {
			t.Errorf("%s: %s with edges %v over %v packets", q.Client, q.Spin, q.Edges, q.Short)
		}
	}
}

// TestSpinGrid runs the grid given in $SONDE_SPIN_GRID ("MBIT:RTTMS:SECONDS
// [,...]") and prints one GRID line per point and method, for
// bench/spin_accuracy.sh. With $SONDE_SPIN_TCP set, an iperf3 upload of
// that many seconds runs in the same lab (TCP timestamp column). It checks
// nothing beyond the runs working: the figures are the bench's.
func TestSpinGrid(t *testing.T) {
	spec := os.Getenv("SONDE_SPIN_GRID")
	if spec == "" {
		t.Skip("SONDE_SPIN_GRID not set (bench/spin_accuracy.sh sets it)")
	}
	needRoot(t)
	bin := quicBin(t)
	tcp, _ := strconv.Atoi(os.Getenv("SONDE_SPIN_TCP"))
	if tcp > 0 {
		if _, err := exec.LookPath("iperf3"); err != nil {
			t.Fatal("SONDE_SPIN_TCP set but iperf3 missing (make apt-deps)")
		}
	}
	dirs := strings.Split(cmp.Or(os.Getenv("SONDE_SPIN_DIRECTIONS"), "down"), ",")
	for _, d := range dirs {
		if d != "up" && d != "down" {
			t.Fatalf("SONDE_SPIN_DIRECTIONS item %q: want up or down", d)
		}
	}
	for _, item := range strings.Split(spec, ",") {
		var p point
		if _, err := fmt.Sscanf(item, "%d:%d:%d", &p.mbit, &p.rttMs, &p.seconds); err != nil {
			t.Fatalf("SONDE_SPIN_GRID item %q: want MBIT:RTTMS:SECONDS", item)
		}
		p.tcp = tcp
		for _, dir := range dirs {
			capFile, truthFile, goodput := runQUIC(t, bin, p, dir)
			res := analyze(t, capFile, truthFile, 0, 'A')
			state := "none"
			if len(res.QUIC) > 0 {
				state = res.QUIC[0].Spin
			}
			for _, name := range []string{"spin-side-server", "spin-full-up", "spin-full-down", "ts-side-b"} {
				m := res.Truth.Method(name)
				if name == "ts-side-b" && tcp == 0 {
					continue
				}
				fmt.Printf("GRID %d %d %s %s %d %d %.3f %.3f %.3f %.3f %.2f %s %.1f\n", p.mbit, p.rttMs, dir, name, m.Samples, m.Matched,
					m.MeanAbsPct, m.MedianPct, m.P90Pct, m.MaxPct, m.SamplesPerS, state, goodput/1e6)
			}
		}
	}
}

// queueBytes is the bottleneck buffer: one bandwidth-delay product (at
// least 20 ms and 16 packets' worth), the classic sizing. A 1000-packet
// buffer would make a 5 Mbit/s path's RTT two seconds of queue.
func queueBytes(p point) int {
	b := p.mbit * 1000 * max(p.rttMs, 20) / 8
	return max(b, 16*1500)
}

// runQUIC builds a one-link lab for p, runs a sonde-quic transfer through
// it with the capture and ground truth on, tears the lab down and returns
// the files.
func runQUIC(t *testing.T, bin string, p point, direction string) (capFile, truthFile string, goodput float64) {
	t.Helper()
	l := labtest.OneLink(t, labtest.Options{Name: "spinacc", Seed: 1, Truth: true,
		Both: fmt.Sprintf("rate=%dMbit delay=%gms limit=%dB", p.mbit, float64(p.rttMs)/2, queueBytes(p))})
	truthFile = l.TruthPath
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(p.seeds, 1)*(p.seconds+2)+p.tcp+30)*time.Second)
	defer cancel()
	addr := l.ServerAddr() + ":4433"
	n := max(p.seeds, 1)
	srvArgs := []string{"server", "--listen", addr, "--seed", "1", "--prompt-acks", "--no-gso"}
	if n == 1 {
		srvArgs = append(srvArgs, "--once")
	}
	srv := l.Command(ctx, lab.Server, bin, srvArgs...)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	time.Sleep(300 * time.Millisecond)
	for seed := 1; seed <= n; seed++ {
		out, err := l.Command(ctx, lab.Client, bin, "client", "--connect", addr, "--direction", direction,
			"--duration", strconv.Itoa(p.seconds)+"s", "--seed", strconv.Itoa(seed), "--prompt-acks", "--no-gso").Output()
		if err != nil {
			t.Fatalf("sonde-quic client (seed %d): %v\n%s", seed, err, out)
		}
		t.Logf("sonde-quic: %s", out)
		var sum struct {
			Goodput float64 `json:"goodput_bps"`
		}
		if err := json.Unmarshal(out, &sum); err != nil {
			t.Fatalf("sonde-quic summary %q: %v", out, err)
		}
		goodput = sum.Goodput
	}
	if p.tcp > 0 {
		isrv := l.Command(ctx, lab.Server, "iperf3", "-s", "-1", "-B", l.ServerAddr())
		if err := isrv.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = isrv.Process.Kill(); _ = isrv.Wait() }()
		time.Sleep(300 * time.Millisecond)
		if out, err := l.Command(ctx, lab.Client, "iperf3", "-c", l.ServerAddr(), "-t", strconv.Itoa(p.tcp), "-w", "4M").CombinedOutput(); err != nil {
			t.Fatalf("iperf3: %v\n%s", err, out)
		}
	}
	capFile = l.Capture() // flushes and closes the capture and the truth
	keep(t, capFile, truthFile)
	return capFile, truthFile, goodput
}

// keep copies a run's capture and truth to $SONDE_SPIN_KEEP (if set), named
// after the test, for a look with sonde analyze or tshark.
func keep(t *testing.T, files ...string) {
	dir := os.Getenv("SONDE_SPIN_KEEP")
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+filepath.Ext(f)), b, 0o644)
		}
		if err != nil {
			t.Logf("keep %s: %v", f, err)
		}
	}
}

// analyze runs the analyser on one interface of a lab capture with the
// ground truth seen from the matching link end.
func analyze(t *testing.T, capFile, truthFile string, iface int, end byte) *model.Analysis {
	t.Helper()
	tr, err := passive.LoadTruth(truthFile, 1, end)
	if err != nil {
		t.Fatal(err)
	}
	a := passive.New(passive.Config{Interface: iface, Identity: true, KeepSamples: true})
	cf, err := a.ReadFile(capFile)
	if err != nil {
		t.Fatal(err)
	}
	if cf.DamageOffset >= 0 {
		t.Fatalf("%s: damaged at %d: %s", capFile, cf.DamageOffset, cf.Damage)
	}
	res := a.Finish(tr)
	ss := a.Samples(tr)
	slices.SortFunc(ss, func(x, y model.PassiveRTT) int { return cmp.Compare(relErr(y), relErr(x)) })
	for _, s := range ss[:min(3, len(ss))] {
		t.Logf("interface %d worst: t=%.3f s %s %s rtt %.3f ms true %.3f ms", iface, s.TimeS, s.Flow, s.Method, s.RTTMs, s.TrueMs)
	}
	return res
}

func relErr(s model.PassiveRTT) float64 {
	if s.TrueMs <= 0 || !s.Valid {
		return 0
	}
	return math.Abs(s.RTTMs/s.TrueMs - 1)
}
