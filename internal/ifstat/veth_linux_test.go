package ifstat

import (
	"context"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
)

// inNS runs fn on a thread inside namespace name (sockets made there stay
// there), then returns the thread to this process's namespace.
func inNS(t *testing.T, name string, fn func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	target, err := os.Open("/run/netns/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			panic(err) // a thread left in the wrong namespace must not be reused
		}
	}()
	fn()
}

// TestVethRate sends a known UDP rate across a veth pair between two
// namespaces and checks the rate the sysfs counters show and the load
// states: idle, up-saturated while sending, idle after the hold.
func TestVethRate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if testing.Short() {
		t.Skip("real-time namespace test")
	}
	a, err := netns.Add(netns.UniqueName("ia"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Delete() })
	b, err := netns.Add(netns.UniqueName("ib"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Delete() })
	ifA := netns.UniqueName("va")
	if err := netns.Veth(a, ifA, "198.18.211.1/24", b, netns.UniqueName("vb"), "198.18.211.2/24"); err != nil {
		t.Fatal(err)
	}
	// sysfs shows the namespace of whoever mounted it: `ip netns exec`
	// mounts one for namespace a, seen through its process's root.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	child, err := netns.StartChild(a.Command(ctx, "sleep", "60"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = child.Wait() })
	var src *Sysfs
	for i := 0; i < 50; i++ { // until `ip netns exec` has mounted its sysfs
		if src, err = OpenSysfs("/proc/"+itoa(child.Pid())+"/root"+SysfsNet, ifA); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	// A receiver in b that never reads: the kernel drops what overflows
	// its buffer, silently (no ICMP back into a).
	var recv, send *net.UDPConn
	inNS(t, b.Name(), func() {
		recv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(198, 18, 211, 2), Port: 9000})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	inNS(t, a.Name(), func() {
		send, err = net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(198, 18, 211, 2), Port: 9000})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()

	const (
		payload = 1000
		frame   = payload + 8 + 20 + 14 // UDP, IPv4, Ethernet: what veth's tx_bytes counts
		rateBps = 8e6
		sendFor = 4 * time.Second
	)
	tr, err := NewTracker(Config{Name: ifA, UpBps: 8.5e6, DownBps: 8.5e6})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- Run(runCtx, src, tr) }()
	defer func() { stop(); <-ran }()

	time.Sleep(1500 * time.Millisecond)
	idleAt := time.Now().UnixNano()
	// Send on absolute 10 ms deadlines, the packets due by now each time.
	buf := make([]byte, payload)
	start := time.Now()
	sent := 0
	for time.Since(start) < sendFor {
		due := int(time.Since(start).Seconds() * rateBps / 8 / frame)
		for ; sent < due; sent++ {
			if _, err := send.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Until(start.Add((time.Since(start)/(10*time.Millisecond) + 1) * 10 * time.Millisecond)))
	}
	end := time.Now()
	time.Sleep(3 * time.Second)
	after := time.Now().UnixNano()

	if s := tr.Classify(idleAt); s != model.LoadIdle {
		t.Errorf("before sending: %v; want idle", s)
	}
	// Rate over the middle of the send (the 1 s window needs a second).
	from, to := start.Add(time.Second).UnixNano(), end.Add(-200*time.Millisecond).UnixNano()
	ss := tr.Samples(from, nil)
	var first, last *model.CounterSample
	for i := range ss {
		if ss[i].TimeNs <= to {
			if first == nil {
				first = &ss[i]
			}
			last = &ss[i]
		}
	}
	if first == nil || last == first {
		t.Fatalf("no samples while sending")
	}
	got := float64(last.TxBytes-first.TxBytes) * 8 / (float64(last.TimeNs-first.TimeNs) / 1e9)
	want := float64(sent) * frame * 8 / end.Sub(start).Seconds()
	t.Logf("veth tx rate from sysfs %.3f Mbit/s; sender %.3f Mbit/s (%d packets)", got/1e6, want/1e6, sent)
	if !near(got, want, 0.03) {
		t.Errorf("counter rate %.3f Mbit/s; sender's %.3f Mbit/s: more than 3 %% apart", got/1e6, want/1e6)
	}
	// A state needs its whole 1 s window inside the send, and the
	// window's first sample may be one 100 ms read before it: 1.2 s in.
	for at := start.Add(1200 * time.Millisecond).UnixNano(); at <= to; at += int64(300 * time.Millisecond) {
		if s := tr.Classify(at); s != model.LoadUp {
			t.Errorf("%.1f s into the send: %v; want up-saturated (8 of 8.5 Mbit/s)", float64(at-start.UnixNano())/1e9, s)
		}
	}
	if s := tr.Classify(end.Add(500 * time.Millisecond).UnixNano()); s != model.LoadUp {
		t.Errorf("0.5 s after the send (draining): %v; want still up-saturated", s)
	}
	if s := tr.Classify(after - int64(200*time.Millisecond)); s != model.LoadIdle {
		t.Errorf("3 s after the send: %v; want idle", s)
	}
	if st := tr.Status(); st.Stale || st.Resets+st.Jumps+st.Wraps != 0 {
		t.Errorf("veth counters: %+v", st)
	}
	if _, err := OpenSysfs("/proc/"+itoa(child.Pid())+"/root"+SysfsNet, "sondenone0"); err == nil {
		t.Error("unknown interface opened")
	} else {
		t.Logf("unknown interface: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
