package udptest

import (
	"cmp"
	"context"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
	"github.com/sonde-project/sonde/internal/stamp"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces")
	}
}

// nsRun measures one STAMP flow from a socket in clientNS to a reflector in
// serverNS (at serverAddr), both made in-process.
func nsRun(t *testing.T, clientNS, serverNS, serverAddr string, count int, interval time.Duration, dscp int) model.UDPFlow {
	t.Helper()
	var rconn, cconn *stamp.Conn
	if err := netns.Do(serverNS, func() (err error) {
		rconn, err = stamp.Listen("udp4", serverAddr+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rclock := stamp.NewClock()
	refl := stamp.NewReflector(rconn, rclock)
	done := make(chan error, 1)
	go func() { done <- refl.Serve() }()
	t.Cleanup(func() { rconn.Close(); <-done })
	if err := netns.Do(clientNS, func() (err error) {
		cconn, err = stamp.Dial("udp4", rconn.LocalAddr().String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	ses, err := refl.Open(stamp.SessionSpec{Client: cconn.LocalAddr().Addr(), RatePPS: 2e4, Burst: 100,
		Expires: time.Now().Add(time.Minute), MaxPackets: count, DSCP: dscp})
	if err != nil {
		t.Fatal(err)
	}
	cclock := stamp.NewClock()
	run, err := stamp.RunSender(context.Background(), stamp.SenderConfig{Conn: cconn, Clock: cclock, SSID: ses.SSID,
		Interval: interval, Count: count, PacketBytes: 64, DSCP: dscp, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if run.Err != nil {
		t.Fatal(run.Err)
	}
	rep, _ := refl.Close(ses.ID)
	return Analyze(Input{Run: run, Report: &rep, Shared: true, SharedNs: rclock.Epoch() - cclock.Epoch(),
		Timeout: 2, DSCP: dscp})
}

// TestLabAsymmetricDelay recovers 10 ms forward and 30 ms back through the
// lab's emulated link (shared clock: the namespaces share the kernel).
func TestLabAsymmetricDelay(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("lab test")
	}
	l, _ := upLab(t, "sondeasym", "rate=100Mbit delay=10ms", "rate=100Mbit delay=30ms", 1, false)
	cns, _ := l.Namespace(lab.Client)
	sns, _ := l.Namespace(lab.Server)
	f := nsRun(t, cns, sns, l.ServerAddr(), 400, 5*time.Millisecond, 0)
	t.Logf("lab 10/30 ms: forward min %.3f p50 %.3f ms, backward min %.3f p50 %.3f ms, RTT p50 %.3f ms, lost %d/%d",
		f.Forward.OWDMs.Min, f.Forward.OWDMs.P50, f.Backward.OWDMs.Min, f.Backward.OWDMs.P50, f.RTTMs.P50, f.Forward.Lost, f.Backward.Lost)
	if f.Replies < 390 {
		t.Fatalf("only %d of 400 replies", f.Replies)
	}
	if d := f.Forward.OWDMs.P50 - 10; d < -0.2 || d > 0.2 {
		t.Errorf("forward one-way delay p50 %.3f ms, want 10 ± 0.2", f.Forward.OWDMs.P50)
	}
	if d := f.Backward.OWDMs.P50 - 30; d < -0.2 || d > 0.2 {
		t.Errorf("backward one-way delay p50 %.3f ms, want 30 ± 0.2", f.Backward.OWDMs.P50)
	}
}

// TestRemarkedDSCP checks that a DSCP rewritten on the way out is
// detected: a user-space relay between client and reflector rewrites the
// forward DS field to CS1 (the kernel here has no tc pedit action to do it
// on a link) and passes the backward one unchanged.
func TestRemarkedDSCP(t *testing.T) {
	rconn, err := stamp.Listen("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refl := stamp.NewReflector(rconn, stamp.NewClock())
	go func() { _ = refl.Serve() }()
	defer rconn.Close()
	relay, err := stamp.Listen("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	go func() {
		buf, oob := make([]byte, 2048), make([]byte, stamp.OOBLen())
		var client netip.AddrPort
		for {
			n, info, err := relay.Read(buf, oob)
			if err != nil {
				return
			}
			if info.From == rconn.LocalAddr() {
				_ = relay.WriteTo(buf[:n], client, info.TOS)
				continue
			}
			client = info.From
			_ = relay.WriteTo(buf[:n], rconn.LocalAddr(), 8<<2|info.TOS&3)
		}
	}()
	cconn, err := stamp.Dial("udp4", relay.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cconn.Close()
	ses, _ := refl.Open(stamp.SessionSpec{Client: netip.MustParseAddr("127.0.0.1"), RatePPS: 1e4, Burst: 100,
		Expires: time.Now().Add(time.Minute), MaxPackets: 50, ECN: 1})
	run, err := stamp.RunSender(context.Background(), stamp.SenderConfig{Conn: cconn, Clock: stamp.NewClock(), SSID: ses.SSID,
		Interval: time.Millisecond, Count: 50, PacketBytes: 64, DSCP: 46, ECN: 1, Timeout: time.Second})
	if err != nil || run.Err != nil {
		t.Fatal(err, run.Err)
	}
	rep, _ := refl.Close(ses.ID)
	f := Analyze(Input{Run: run, Report: &rep, Timeout: 1, DSCP: 46, ECN: 1})
	m := f.Marks
	if m == nil || m.AtReflectorDSCP == nil || *m.AtReflectorDSCP != 8 || *m.AtReflectorECN != 1 || m.ForwardOK == nil || *m.ForwardOK {
		t.Fatalf("forward remark not detected: %+v", m)
	}
	if m.ForwardChanged != f.Replies || f.Replies != 50 {
		t.Errorf("forward changed %d of %d replies", m.ForwardChanged, f.Replies)
	}
	// The reflector marked its replies with the DSCP asked for (CoS DSCP1)
	// and the session's ECN; the relay left them alone.
	if m.AtClientDSCP == nil || *m.AtClientDSCP != 46 || m.BackwardOK == nil || !*m.BackwardOK {
		t.Errorf("backward marks %+v", m)
	}
}

// TestVethClean checks that on a clean veth path there is no loss, no
// reordering and sub-millisecond jitter.
func TestVethClean(t *testing.T) {
	needRoot(t)
	a, err := netns.Add(netns.UniqueName("ua"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Delete() })
	b, err := netns.Add(netns.UniqueName("ub"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Delete() })
	if err := netns.Veth(a, netns.UniqueName("va"), "198.18.201.1/24", b, netns.UniqueName("vb"), "198.18.201.2/24"); err != nil {
		t.Fatal(err)
	}
	f := nsRun(t, a.Name(), b.Name(), "198.18.201.2", 500, time.Millisecond, 0)
	if f.Forward.Lost != 0 || f.Backward.Lost != 0 || f.Forward.Reordering.Reordered != 0 || f.Backward.Reordering.Reordered != 0 {
		t.Errorf("clean path: lost %d/%d reordered %d/%d", f.Forward.Lost, f.Backward.Lost,
			f.Forward.Reordering.Reordered, f.Backward.Reordering.Reordered)
	}
	if f.Forward.OWDMs.Min < 0 || f.Backward.OWDMs.Min < 0 {
		t.Errorf("negative one-way delay on a shared clock: %v / %v", f.Forward.OWDMs.Min, f.Backward.OWDMs.Min)
	}
	t.Logf("veth 1 ms: RTT p50 %.3f ms; jitter %.4f / %.4f ms; schedule error p99 %.1f µs",
		f.RTTMs.P50, f.Forward.JitterMs, f.Backward.JitterMs, f.ScheduleErrorUs.P99)
}

// TestLabRemarkedDSCP sends EF probes across an emulated link that remarks
// EF to CS1 upstream only, as a policing access network might, and checks
// that the test says so for the forward direction and not the backward.
func TestLabRemarkedDSCP(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("lab test")
	}
	l, _ := upLab(t, "sonderemark", "delay=1ms remark=ef:cs1", "delay=1ms", 1, false)
	cns, _ := l.Namespace(lab.Client)
	sns, _ := l.Namespace(lab.Server)
	f := nsRun(t, cns, sns, l.ServerAddr(), 100, 5*time.Millisecond, 46)
	m := f.Marks
	if m == nil || m.AtReflectorDSCP == nil || m.ForwardOK == nil || m.BackwardOK == nil {
		t.Fatalf("marks not reported: %+v", m)
	}
	if *m.AtReflectorDSCP != 8 || *m.ForwardOK || m.ForwardChanged == 0 {
		t.Errorf("forward: reflector saw DSCP %d, ok=%v, %d changed; want CS1 (8) detected as remarked",
			*m.AtReflectorDSCP, *m.ForwardOK, m.ForwardChanged)
	}
	if !*m.BackwardOK || m.BackwardChanged != 0 {
		t.Errorf("backward: ok=%v, %d changed; the link does not remark downstream", *m.BackwardOK, m.BackwardChanged)
	}
}

// TestLabGilbertElliottLoss sends probes across a link with bursty
// Gilbert–Elliott loss upstream and checks that the forward loss pattern
// sonde reports (RFC 3357 loss periods) is exactly the one the emulator's
// ground-truth file records for the same packets.
func TestLabGilbertElliottLoss(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("lab test")
	}
	// Good→bad 2%, bad→good 30%, loss 60% in the bad state: mean bursts of
	// a few packets, about 4% loss overall.
	l, truthPath := upLab(t, "sondege", "delay=1ms ge=2%/30%/60%/0%", "delay=1ms", 7, true)
	cns, _ := l.Namespace(lab.Client)
	sns, _ := l.Namespace(lab.Server)
	const n = 3000
	f := nsRun(t, cns, sns, l.ServerAddr(), n, 2*time.Millisecond, 0)
	if err := l.Down(); err != nil { // flushes and closes the truth file
		t.Fatal(err)
	}
	up := upstreamUDP(t, truthPath)
	if len(up) != n {
		t.Fatalf("ground truth has %d upstream UDP packets, want %d", len(up), n)
	}
	lost := make([]bool, n)
	for i, r := range up {
		lost[i] = r.Fate == emulator.DropLoss
	}
	want := metrics.LossPatternOf(lost, 1)
	got := f.Forward.LossPattern
	t.Logf("ground truth: %d lost in %d periods (mean length %.2f); sonde forward: %d lost in %d periods (mean %.2f)",
		want.Lost, want.Periods, want.PeriodLength.Mean, got.Lost, got.Periods, got.PeriodLength.Mean)
	if want.Lost < 40 || want.Periods < 10 {
		t.Fatalf("too little loss to compare: %d lost in %d periods", want.Lost, want.Periods)
	}
	if got.Lost != want.Lost || got.Periods != want.Periods || got.PeriodLength != want.PeriodLength ||
		got.InterPeriodLength != want.InterPeriodLength || got.LossDistance != want.LossDistance {
		t.Fatalf("forward loss pattern differs from the ground truth:\n got %+v\nwant %+v", got, want)
	}
	if f.Backward.Lost != 0 {
		t.Errorf("backward lost %d; the down link has no loss", f.Backward.Lost)
	}
}

// TestLabJitterWithoutReordering sends probes across a link with normal
// jitter that keeps packet order (the default, like a real link) and checks
// that the one-way delay distribution, RFC 3550 jitter and the absence of
// reordering that sonde reports match the emulator's per-packet ground truth.
func TestLabJitterWithoutReordering(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("lab test")
	}
	l, truthPath := upLab(t, "sondejit", "delay=10ms jitter=2ms dist=normal", "delay=5ms", 11, true)
	cns, _ := l.Namespace(lab.Client)
	sns, _ := l.Namespace(lab.Server)
	const n = 1500
	f := nsRun(t, cns, sns, l.ServerAddr(), n, 5*time.Millisecond, 0)
	if err := l.Down(); err != nil {
		t.Fatal(err)
	}
	up := slices.DeleteFunc(upstreamUDP(t, truthPath), func(r emulator.Record) bool { return r.Fate != emulator.Delivered })
	if len(up) != n {
		t.Fatalf("ground truth has %d delivered upstream probes, want %d", len(up), n)
	}
	// The emulator's own delay of each probe, and when it entered and left.
	delay := make([]float64, n)
	in, out := make([]float64, n), make([]float64, n)
	for i, r := range up {
		delay[i] = float64(r.Sent-r.Arrival) / 1e6
		in[i], out[i] = float64(r.Arrival)/1e6, float64(r.Sent)/1e6
	}
	want := metrics.Summarize(delay)
	wantJitter := metrics.Jitter3550(in, out)
	got := f.Forward
	t.Logf("ground truth: delay mean %.3f sd %.3f p50 %.3f ms, jitter %.3f ms; sonde forward OWD mean %.3f sd %.3f p50 %.3f ms, jitter %.3f ms, reordered %d",
		want.Mean, want.Stddev, want.P50, wantJitter, got.OWDMs.Mean, got.OWDMs.Stddev, got.OWDMs.P50, got.JitterMs, got.Reordering.Reordered)
	if want.Stddev < 1.5 {
		t.Fatalf("ground truth stddev %.3f ms: the link did not jitter as configured", want.Stddev)
	}
	// OWD includes the TUN devices and stacks around the emulator: a small,
	// steady offset that moves the centre but not the spread.
	if d := got.OWDMs.P50 - want.P50; d < 0 || d > 0.2 {
		t.Errorf("forward OWD median %.3f ms vs ground truth %.3f ms: off by %.3f ms, want within [0, 0.2]", got.OWDMs.P50, want.P50, d)
	}
	if r := got.OWDMs.Stddev / want.Stddev; r < 0.95 || r > 1.05 {
		t.Errorf("forward OWD stddev %.3f ms vs ground truth %.3f ms (ratio %.3f), want within 5%%", got.OWDMs.Stddev, want.Stddev, r)
	}
	if r := got.JitterMs / wantJitter; r < 0.9 || r > 1.1 {
		t.Errorf("RFC 3550 jitter %.3f ms vs ground truth %.3f ms (ratio %.3f), want within 10%%", got.JitterMs, wantJitter, r)
	}
	if got.Reordering.Reordered != 0 {
		t.Errorf("%d probes reordered across an order-preserving link", got.Reordering.Reordered)
	}
}

// upLab builds a one-link lab from up and down link specifications, with a
// ground-truth file when truth is set; the lab comes down at cleanup (or
// earlier through its Down, which flushes the file).
func upLab(t *testing.T, name, up, down string, seed uint64, truth bool) (l *lab.Lab, truthPath string) {
	t.Helper()
	p, err := lab.Scenario{Name: name, Links: []lab.ScenarioLink{{Up: up, Down: down}}}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	opts := lab.Options{Seed: seed, StateDir: t.TempDir()}
	if truth {
		truthPath = t.TempDir() + "/truth.sgt"
		opts.TruthPath = truthPath
	}
	l, err = lab.UpProfile(context.Background(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Down() })
	return l, truthPath
}

// upstreamUDP reads the ground truth of the UDP packets that entered the
// link upstream, in arrival order (the file holds them in the order their
// fates were decided).
func upstreamUDP(t *testing.T, path string) []emulator.Record {
	t.Helper()
	_, recs, err := emulator.ReadTruthFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var up []emulator.Record
	for _, r := range recs {
		if r.Dir == emulator.Up && r.Proto == 17 {
			up = append(up, r)
		}
	}
	slices.SortFunc(up, func(a, b emulator.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return up
}
