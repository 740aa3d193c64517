package udptest

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// startServer runs a sonde server with its reflector on loopback.
func startServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	if cfg.UDPAddr == "" {
		cfg.UDPAddr = "127.0.0.1:0"
	}
	cfg.PerIPPerMinute = -1
	return servertest.Start(t, cfg)
}

func TestRunLoopback(t *testing.T) {
	addr := startServer(t, server.Config{})
	res, err := Run(context.Background(), Options{
		Server: addr, Software: "sonde-test", Interval: time.Millisecond, Duration: 300 * time.Millisecond,
		PacketBytes: 100, DSCP: 46, ECN: 1, Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Flows) != 1 {
		t.Fatalf("%d flows", len(res.Flows))
	}
	f := res.Flows[0]
	if f.Sent != 300 || f.Replies != 300 {
		t.Fatalf("sent %d replies %d, want 300/300 (errors %v)", f.Sent, f.Replies, f.Errors)
	}
	for _, d := range []struct {
		name  string
		lost  int
		sent  int
		known bool
	}{{"forward", f.Forward.Lost, f.Forward.Sent, f.Forward.Known}, {"backward", f.Backward.Lost, f.Backward.Sent, f.Backward.Known}} {
		if d.lost != 0 || d.sent != 300 || !d.known {
			t.Errorf("%s: lost %d of %d (known %v)", d.name, d.lost, d.sent, d.known)
		}
	}
	if f.ReflectorFormat != "stamp" || len(f.UnparsedReplies) != 0 {
		t.Errorf("sonde's reflector read as %q, unparsed %+v", f.ReflectorFormat, f.UnparsedReplies)
	}
	if !f.Clock.SharedClock {
		t.Errorf("loopback reflector not recognised as a shared clock: %+v", f.Clock)
	}
	// On loopback both one-way delays are tiny and not negative (shared
	// clock: measured, not estimated).
	for _, d := range []float64{f.Forward.OWDMs.Min, f.Backward.OWDMs.Min} {
		if d < 0 || d > 5 {
			t.Errorf("one-way delay min %.3f ms out of [0, 5]", d)
		}
	}
	if f.RTTMs.P50 <= 0 || f.RTTMs.P50 > 5 {
		t.Errorf("RTT p50 %.3f ms", f.RTTMs.P50)
	}
	if s := f.Forward.OWDMs.P50 + f.Backward.OWDMs.P50; s > f.RTTMs.P50*1.5+0.05 {
		t.Errorf("one-way delays %.3f + %.3f inconsistent with RTT %.3f", f.Forward.OWDMs.P50, f.Backward.OWDMs.P50, f.RTTMs.P50)
	}
	m := f.Marks
	if m == nil || m.ForwardOK == nil || !*m.ForwardOK || m.BackwardOK == nil || !*m.BackwardOK || *m.AtReflectorDSCP != 46 {
		t.Errorf("marks %+v", m)
	}
	if f.ScheduleErrorUs.N != 300 {
		t.Errorf("schedule error sample %d", f.ScheduleErrorUs.N)
	}
	t.Logf("loopback 1 ms: RTT p50 %.3f ms p99 %.3f; fwd %.3f bwd %.3f ms; schedule error p50 %.1f p99 %.1f µs; kernel ts %v",
		f.RTTMs.P50, f.RTTMs.P99, f.Forward.OWDMs.P50, f.Backward.OWDMs.P50, f.ScheduleErrorUs.P50, f.ScheduleErrorUs.P99, f.KernelTimestamps)
}

func TestClassesAndVoice(t *testing.T) {
	addr := startServer(t, server.Config{})
	o := Options{Server: addr, Duration: 300 * time.Millisecond, Timeout: time.Second,
		Classes: []model.Class{{Name: "ef", DSCP: 46}, {Name: "be", DSCP: 0}}}
	o.VoiceProfile()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Flows) != 2 || res.Config.Profile != "voice" {
		t.Fatalf("flows %d profile %q", len(res.Flows), res.Config.Profile)
	}
	for i, f := range res.Flows {
		if f.Sent != 15 || f.Replies != 15 {
			t.Errorf("%s: sent %d replies %d", f.Name, f.Sent, f.Replies)
		}
		if f.Marks == nil || f.Marks.AtReflectorDSCP == nil || *f.Marks.AtReflectorDSCP != o.Classes[i].DSCP {
			t.Errorf("%s: marks %+v", f.Name, f.Marks)
		}
		if f.Voice == nil || f.Voice.MOS < 4.3 {
			t.Errorf("%s: voice %+v on loopback", f.Name, f.Voice)
		}
	}
}

func TestProbes(t *testing.T) {
	addr := startServer(t, server.Config{})
	p, err := StartProbes(context.Background(), addr, ProbeOptions{Interval: 5 * time.Millisecond, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	f, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if f.Sent < 20 || f.Replies != f.Sent || f.Forward.Lost != 0 || f.Backward.Lost != 0 {
		t.Fatalf("probes: sent %d replies %d lost %d/%d errors %v", f.Sent, f.Replies, f.Forward.Lost, f.Backward.Lost, f.Errors)
	}
	if _, err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Run(context.Background(), Options{Server: addr, Interval: time.Millisecond, Duration: 10 * time.Millisecond,
		PacketBytes: 52, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want connection refused", err)
	}
}

func TestServerWithoutReflector(t *testing.T) {
	addr := startServer(t, server.Config{UDPAddr: "off"})
	res, err := Run(context.Background(), Options{Server: addr, Interval: time.Millisecond, Duration: 10 * time.Millisecond,
		PacketBytes: 52, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "no UDP reflector") {
		t.Fatalf("err = %v", err)
	}
	if res == nil || len(res.Errors) == 0 {
		t.Fatalf("result without the error: %+v", res)
	}
}

func TestServerLimits(t *testing.T) {
	addr := startServer(t, server.Config{UDPMaxRate: 100})
	_, err := Run(context.Background(), Options{Server: addr, Interval: time.Millisecond, Duration: 10 * time.Millisecond,
		PacketBytes: 52, Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "exceeds this server's limit") {
		t.Fatalf("err = %v", err)
	}
}
