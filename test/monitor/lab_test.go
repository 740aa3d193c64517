//go:build linux

package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/testbin"
)

// sondeBin is the binary under test, built once by TestMain (or SONDE_BIN).
var sondeBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &sondeBin, true)) }

func needLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: builds network namespaces and TUN devices (run go test as root)")
	}
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("iperf3 not installed (make apt-deps): it makes the CUBIC cross traffic")
	}
}

// Ports in the server's namespace.
const (
	sondePort = 8080
	iperfPort = 5201
)

// probeRate is the daemon's rate (probes/s), the 10/s.
const probeRate = 10

// interval is the probe interval, the resolution of outage durations.
const interval = time.Second / probeRate

// rig is a lab with a sonde server, an iperf3 server and the monitor
// daemon on the client, writing to its own store.
type rig struct {
	t       *testing.T
	lab     *lab.Lab
	truth   model.GroundTruth
	profile lab.Profile
	dir     string
	store   string
	iface   string
	daemon  *exec.Cmd
	started time.Time // the daemon's start
}

// startRig builds the profile and starts the servers and the daemon.
// Cleanup stops everything.
func startRig(t *testing.T, p lab.Profile) *rig {
	t.Helper()
	r := &rig{t: t, profile: p, truth: p.GroundTruth(), dir: t.TempDir()}
	r.store = filepath.Join(r.dir, "monitor.db")
	l := upLab(t, p, 13)
	r.lab = l
	r.iface = clientLinkDevice(t, l)
	r.background(lab.Server, "sonde serve", sondeBin, "serve", "--addr", fmt.Sprintf("%s:%d", l.ServerAddr(), sondePort))
	r.background(lab.Server, "iperf3 -s", "iperf3", "-s", "-B", l.ServerAddr(), "-p", strconv.Itoa(iperfPort))
	waitTCP(t, l, fmt.Sprintf("%s:%d", l.ServerAddr(), sondePort))
	r.started = time.Now()
	r.daemon = r.background(lab.Client, "sonde monitor run", sondeBin, "monitor", "run",
		"--target", fmt.Sprintf("%s:%d", l.ServerAddr(), sondePort),
		"--rate", strconv.Itoa(probeRate),
		"--interface", r.iface,
		"--up-link-rate", strconv.FormatFloat(r.truth.UpRateBps, 'f', -1, 64),
		"--down-link-rate", strconv.FormatFloat(r.truth.DownRateBps, 'f', -1, 64),
		"--store", r.store, "--listen", "off", "--name", "lab")
	return r
}

// upLab builds a profile's lab; cleanup takes it down.
func upLab(t *testing.T, p lab.Profile, seed uint64) *lab.Lab {
	t.Helper()
	l, err := lab.UpProfile(context.Background(), p, lab.Options{Seed: seed, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Down(); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	return l
}

// clientLinkDevice is the client's end of the access link: the TUN device
// the lab made in the client's namespace.
func clientLinkDevice(t *testing.T, l *lab.Lab) string {
	t.Helper()
	out, err := l.Command(context.Background(), lab.Client, "ip", "-o", "link", "show").Output()
	if err != nil {
		t.Fatalf("client: ip link: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && strings.HasPrefix(f[1], "sonde") {
			return strings.TrimSuffix(strings.SplitN(f[1], "@", 2)[0], ":")
		}
	}
	t.Fatalf("client: no lab device in\n%s", out)
	return ""
}

// background starts a program in a node's namespace in its own process
// group; cleanup kills the group. Its output goes to a file in the test's
// directory, shown when the test fails.
func (r *rig) background(node, what, name string, args ...string) *exec.Cmd {
	r.t.Helper()
	cmd := r.lab.Command(context.Background(), node, name, args...)
	logPath := filepath.Join(r.dir, strings.ReplaceAll(what, " ", "-")+".log")
	f, err := os.Create(logPath)
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		r.t.Fatalf("%s: %v", what, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	cmd.Cancel = nil
	r.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		f.Close()
		if r.t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
				r.t.Logf("%s output (last 2 KB):\n%s", what, tail(b, 2048))
			}
		}
	})
	return cmd
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitTCP waits up to 10 s for a listener, connecting from the client.
func waitTCP(t *testing.T, l *lab.Lab, addr string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := l.Command(context.Background(), lab.Client, "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port)).Run()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not listening after 10 s: %v", addr, err)
		}
	}
}

// load runs a saturating CUBIC transfer for d (reverse: download) and
// returns when it ran.
func (r *rig) load(d time.Duration, reverse bool) (from, to time.Time) {
	r.t.Helper()
	args := []string{"-c", r.lab.ServerAddr(), "-p", strconv.Itoa(iperfPort), "-C", "cubic",
		"-t", strconv.FormatFloat(d.Seconds(), 'f', 1, 64)}
	if reverse {
		args = append(args, "-R")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	args = append(args, "-J")
	from = time.Now()
	out, err := r.lab.Command(ctx, lab.Client, "iperf3", args...).Output()
	to = time.Now()
	if err != nil {
		r.t.Fatalf("iperf3 %s: %v\n%s", strings.Join(args, " "), err, tail(out, 2048))
	}
	// The sender must run CUBIC: this machine's default, BBR, keeps the
	// queue near one BDP and would never fill a drop-tail buffer. -C sets
	// it on both ends' sockets (a namespace may not change its default:
	// tcp_allowed_congestion_control).
	var res struct {
		End struct {
			SumSent struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_sent"`
			SenderCC string `json:"sender_tcp_congestion"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		r.t.Fatalf("iperf3 -J: %v\n%s", err, tail(out, 2048))
	}
	if res.End.SenderCC != "cubic" {
		r.t.Fatalf("iperf3's sender ran %q, not cubic", res.End.SenderCC)
	}
	r.t.Logf("iperf3 %s: %.3f Mbit/s sent, sender %s", strings.Join(args, " "), res.End.SumSent.BitsPerSecond/1e6, res.End.SenderCC)
	return from, to
}

// stop ends the daemon with SIGTERM (it writes its last second and rolls
// up) and waits for it.
func (r *rig) stop() {
	r.t.Helper()
	_ = r.daemon.Process.Signal(syscall.SIGTERM)
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if r.daemon.ProcessState != nil || syscall.Kill(r.daemon.Process.Pid, 0) != nil {
			return
		}
	}
	r.t.Fatal("the monitor daemon did not stop within 15 s of SIGTERM")
}

// config is the analysis the daemon's detectors run: the probe interval
// and the access link's capacities from the ground truth.
func (r *rig) config() reliability.Config {
	var c reliability.Config
	c.ProbeIntervalNs = int64(interval)
	c.Loaded.UpBps, c.Loaded.DownBps = r.truth.UpRateBps, r.truth.DownRateBps
	return c
}

// report analyses the stored raw probes sent in [from, to) with the
// reliability analysis (what `monitor report` runs), reading the raw rows
// of the phase itself so that each phase is judged on its own probes and
// with the profile's configured capacities (the truth), not the daemon's.
func (r *rig) report(from, to time.Time) *model.MonitorReport {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, r.store, store.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	ids, err := st.ListMonitors(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	mid, ok := ids["lab"]
	if !ok {
		r.t.Fatalf("store: no monitor \"lab\" (have %v)", ids)
	}
	byID, err := st.ListStreams(ctx, mid)
	if err != nil {
		r.t.Fatal(err)
	}
	if len(byID) != 1 {
		r.t.Fatalf("store: %d streams, want 1", len(byID))
	}
	var streams []model.MonitorStream
	for _, s := range byID {
		streams = append(streams, s)
	}
	an, err := reliability.New(r.config(), streams)
	if err != nil {
		r.t.Fatal(err)
	}
	err = st.Probes(ctx, mid, from.UnixNano(), to.UnixNano(), func(p model.ProbeSample) error {
		p.Stream = 0
		return an.AddSample(p)
	})
	if err != nil {
		r.t.Fatal(err)
	}
	rep, err := an.Report(from.UnixNano(), to.UnixNano())
	if err != nil {
		r.t.Fatalf("report [%v, %v): %v", from.Sub(r.started), to.Sub(r.started), err)
	}
	if len(rep.Stats) != 1 {
		r.t.Fatalf("report: %d streams, want 1", len(rep.Stats))
	}
	for _, e := range rep.Events {
		if e.Kind == model.EventLoaded {
			r.t.Logf("episode: %s %v %v", e.Text, e.Flags, e.Detail)
		}
	}
	return rep
}

// storedEvents are the events the daemon itself wrote.
func (r *rig) storedEvents() []model.MonitorEvent {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, r.store, store.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	ids, err := st.ListMonitors(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	evs, err := st.Events(ctx, ids["lab"], 0, time.Now().Add(time.Hour).UnixNano(), 1000)
	if err != nil {
		r.t.Fatal(err)
	}
	return evs
}

// cliReport runs `sonde monitor report --json` over [from, to).
func (r *rig) cliReport(from, to time.Time) *model.MonitorReport {
	r.t.Helper()
	file := filepath.Join(r.dir, "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, sondeBin, "monitor", "report", "--store", r.store,
		"--from", from.UTC().Format(time.RFC3339Nano), "--to", to.UTC().Format(time.RFC3339Nano), "--json", file).CombinedOutput()
	if err != nil {
		r.t.Fatalf("sonde monitor report: %v\n%s", err, out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		r.t.Fatal(err)
	}
	var rep model.MonitorReport
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&rep); err != nil {
		r.t.Fatalf("report JSON: %v", err)
	}
	return &rep
}

// sleepUntil sleeps until t (bounded: t is at most minutes away).
func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

// probeWire is the probe's size on the wire: STAMP's base packet in UDP
// and IPv4, as the daemon sends it by default.
const probeWire = stamp.BaseLen + 8 + 20

// serialisation is the time a packet of n bytes occupies a link of rate bps.
func serialisation(n int, bps float64) time.Duration {
	if bps <= 0 {
		return 0
	}
	return time.Duration(float64(n*8) / bps * 1e9)
}

// row is one line of the measured-against-truth table.
type row struct {
	figure, measured, truth, bound string
	ok                             bool
}

type table struct {
	t    *testing.T
	rows []row
}

// check records a figure and fails the test when ok is false.
func (tb *table) check(figure, measured, truth, bound string, ok bool) {
	tb.rows = append(tb.rows, row{figure, measured, truth, bound, ok})
	if !ok {
		tb.t.Errorf("%s: measured %s, truth %s, bound %s", figure, measured, truth, bound)
	}
}

func (tb *table) log(title string) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%-44s %-16s %-16s %-26s %s\n", title, "figure", "measured", "truth", "bound", "")
	for _, r := range tb.rows {
		v := "ok"
		if !r.ok {
			v = "MISS"
		}
		fmt.Fprintf(&b, "%-44s %-16s %-16s %-26s %s\n", r.figure, r.measured, r.truth, r.bound, v)
	}
	tb.t.Log(b.String())
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
func nsMs(ns int64) string      { return ms(time.Duration(ns)) }

// rAt is R(L) at L of a reliability list.
func rAt(rs []model.Reliability, l time.Duration) (model.Reliability, bool) {
	for _, r := range rs {
		if r.LNs == int64(l) {
			return r, true
		}
	}
	return model.Reliability{}, false
}

func byLoad(s model.StreamReport, state model.LoadState) (model.LoadReliability, bool) {
	for _, b := range s.ByLoad {
		if b.Load == state.String() {
			return b, true
		}
	}
	return model.LoadReliability{}, false
}

func events(rep *model.MonitorReport, kind model.EventKind) []model.MonitorEvent {
	var out []model.MonitorEvent
	for _, e := range rep.Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func hasFlag(e model.MonitorEvent, f string) bool {
	for _, g := range e.Flags {
		if g == f {
			return true
		}
	}
	return false
}

// episode is the loaded episode of the given direction (the longest).
func episode(evs []model.MonitorEvent, state model.LoadState) (model.MonitorEvent, bool) {
	var best model.MonitorEvent
	found := false
	for _, e := range evs {
		if e.Kind == model.EventLoaded && hasFlag(e, state.String()) && (!found || e.EndNs-e.StartNs > best.EndNs-best.StartNs) {
			best, found = e, true
		}
	}
	return best, found
}

func queueClass(e model.MonitorEvent) string {
	for _, f := range e.Flags {
		if c, ok := strings.CutPrefix(f, "queue="); ok {
			return c
		}
	}
	return ""
}

var errNoEpisode = errors.New("no loaded episode")
