package stamp

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"
)

// startReflector runs a reflector on a loopback port for the test.
func startReflector(t *testing.T) (*Reflector, netip.AddrPort) {
	t.Helper()
	conn, err := Listen("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := NewReflector(conn, NewClock())
	done := make(chan error, 1)
	go func() { done <- r.Serve() }()
	t.Cleanup(func() {
		conn.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return r, conn.LocalAddr()
}

func openSession(t *testing.T, r *Reflector, count int) *Session {
	t.Helper()
	s, err := r.Open(SessionSpec{
		Client: netip.MustParseAddr("127.0.0.1"), RatePPS: 5000, Burst: 50,
		Expires: time.Now().Add(time.Minute), MaxPackets: count, ECN: 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoopbackSession(t *testing.T) {
	r, addr := startReflector(t)
	s := openSession(t, r, 200)
	conn, err := Dial("udp4", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	run, err := RunSender(context.Background(), SenderConfig{
		Conn: conn, Clock: NewClock(), SSID: s.SSID, Interval: time.Millisecond, Count: 200,
		PacketBytes: 172, DSCP: 46, ECN: 1, Timeout: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if run.Err != nil {
		t.Fatal(run.Err)
	}
	got := 0
	for i, rep := range run.Replies[:run.Sent] {
		if !rep.Got {
			continue
		}
		got++
		rtt := (rep.T4 - run.Sends[i].T1) - (rep.T3 - rep.T2)
		if rtt < 0 || rtt > int64(50*time.Millisecond) {
			t.Errorf("probe %d: RTT %v", i, time.Duration(rtt))
		}
		if !rep.HasCoS || rep.CoS.DSCP2 != 46 || rep.CoS.ECN != 1 {
			t.Errorf("probe %d: reflector saw CoS %+v (has %v), want DSCP 46 ECN 1", i, rep.CoS, rep.HasCoS)
		}
		if rep.TOS != 46<<2|0 {
			t.Errorf("probe %d: reply TOS %#x, want EF with ECN 0", i, rep.TOS)
		}
	}
	if run.Sent != 200 || got != 200 {
		t.Fatalf("sent %d, replies %d, want 200/200", run.Sent, got)
	}
	rep, ok := r.Close(s.ID)
	if !ok || rep.Received != 200 || rep.Reflected != 200 || !rep.Has(0) || !rep.Has(199) || rep.TOS[46<<2|1] != 200 {
		t.Fatalf("report %+v", rep)
	}
	if _, ok := r.Close(s.ID); ok {
		t.Error("closed twice")
	}
}

func TestNoReflectionWithoutSession(t *testing.T) {
	r, addr := startReflector(t)
	s := openSession(t, r, 10)
	conn, err := Dial("udp4", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A wrong SSID: nothing comes back, and the run says why.
	run, err := RunSender(context.Background(), SenderConfig{
		Conn: conn, Clock: NewClock(), SSID: s.SSID + 1, Interval: time.Millisecond, Count: 10,
		PacketBytes: 52, Timeout: 100 * time.Millisecond, NoReplyAbort: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(run.Err, ErrNoReply) {
		t.Fatalf("run error %v, want ErrNoReply", run.Err)
	}
	// Truncated probes are dropped and counted.
	if err := conn.WriteTo(make([]byte, 20), netip.AddrPort{}, -1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		_, unsolicited, malformed := r.Counters()
		if malformed == 1 && unsolicited == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unsolicited %d malformed %d, want 10 and 1", unsolicited, malformed)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if rep, _ := r.Close(s.ID); rep.Received != 0 {
		t.Errorf("session got %d probes of another SSID", rep.Received)
	}
}

func TestSessionLimits(t *testing.T) {
	s := &Session{spec: SessionSpec{RatePPS: 100, Burst: 5, Expires: time.Now().Add(time.Second), MaxPackets: 100},
		tokens: 5, rep: SessionReport{Bitmap: make([]byte, 13), TOS: map[int]int{}}}
	now := time.Now()
	ok := 0
	for i := range 20 {
		if _, accepted := s.admit(uint32(i), 0, now); accepted {
			ok++
		}
	}
	if ok != 5 || s.rep.RateLimited != 15 {
		t.Errorf("burst: %d accepted, %d limited; want 5 and 15", ok, s.rep.RateLimited)
	}
	if _, accepted := s.admit(50, 0, now.Add(50*time.Millisecond)); !accepted {
		t.Error("refill after 50 ms at 100 pps refused")
	}
	if _, accepted := s.admit(51, 0, now.Add(2*time.Second)); accepted || s.rep.Late != 1 {
		t.Error("probe after expiry reflected")
	}
	// Duplicates are counted, and reflected.
	s.spec.Expires = now.Add(time.Hour)
	s.admit(50, 0, now.Add(3*time.Second))
	if s.rep.Duplicates != 1 {
		t.Errorf("duplicates = %d", s.rep.Duplicates)
	}
}

func TestClockFromKernel(t *testing.T) {
	c := NewClock()
	now := time.Now()
	ns, ok := c.FromKernel(now.UnixNano()-int64(300*time.Microsecond), now)
	if !ok || c.At(now)-ns != int64(300*time.Microsecond) {
		t.Errorf("300 µs old packet: %v %v", c.At(now)-ns, ok)
	}
	if _, ok := c.FromKernel(now.UnixNano()+int64(time.Second), now); ok {
		t.Error("timestamp from the future accepted")
	}
	var d StepDetector
	d.Check(now)
	if d.Check(now.Add(time.Millisecond)) {
		t.Error("no step reported as one")
	}
	// Two Clocks on one host differ by their epochs, to within a µs.
	c2 := NewClock()
	if diff := (c2.Now() - c.Now()) - (c2.Epoch() - c.Epoch()); diff > 5000 || diff < -5000 {
		t.Errorf("clocks disagree by %d ns beyond their epochs", diff)
	}
}
