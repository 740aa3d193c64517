package tcprun

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
)

// inNS runs fn on a thread switched into the named network namespace;
// sockets made there stay in it.
func inNS(name string, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + name)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", name, err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.Goexit() // the thread is in the wrong namespace: never give it back
	}
	return ferr
}

// labPath is a one-link lab with an in-process `sonde serve` in its
// server namespace and a session dialled from its client namespace.
type labPath struct {
	lab     *lab.Lab
	session *Session
	sysctl  func(string) (string, error)
}

// upPath builds the lab (no capture: only the verdicts are checked) and
// sets tcp_slow_start_after_idle to 0 in the client's namespace, as a
// burst test wants.
func upPath(t *testing.T, name, up, down string) *labPath {
	t.Helper()
	p, err := lab.Scenario{Name: name, Links: []lab.ScenarioLink{{Name: "link1", Up: up, Down: down}}}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.UpProfile(context.Background(), p, lab.Options{Seed: 7, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Down() })
	cns, _ := l.Namespace(lab.Client)
	sns, _ := l.Namespace(lab.Server)
	if err := inNS(cns, func() error {
		return os.WriteFile("/proc/sys/net/ipv4/tcp_slow_start_after_idle", []byte("0"), 0)
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{MaxDuration: 2 * time.Minute, PerIPPerMinute: -1, WebRTCPort: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := inNS(sns, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(l.ServerAddr(), "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, []net.Listener{ln}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	dial := func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = inNS(cns, func() (err error) {
			c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}
	s, err := Dial(context.Background(), Server{URL: "http://" + ln.Addr().String(), DurationS: 100, DialContext: dial})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &labPath{lab: l, session: s, sysctl: func(key string) (v string, err error) {
		err = inNS(cns, func() (err error) { v, err = readSysctl(key); return err })
		return v, err
	}}
}

// expected is the verdict the lab's configured upstream path must give a
// target: FAIL if its rate is below the precondition or its loss is at
// least p1, PASS if its rate carries the target and its loss is at most
// p0 (no queue overflow: the test paces below the rate), "" otherwise.
func expected(gt model.GroundTruth, p mbm.Plan, pre float64) string {
	switch {
	case gt.UpRateBps > 0 && gt.UpRateBps < pre*p.RateBps:
		return "FAIL"
	case gt.UpLoss >= p.P1:
		return "FAIL"
	case (gt.UpRateBps == 0 || gt.UpRateBps >= 1.5*p.RateBps) && gt.UpLoss <= p.P0:
		return "PASS"
	}
	return ""
}

// TestLabPaced runs 8.1.1 at 10 Mbit/s, 20 ms through three links and
// checks each verdict against the emulator's configured path: a clean
// 20 Mbit/s link PASSes with goodput within 2 % of the target; 1 % loss
// FAILs; a 5 Mbit/s link FAILs by the rate precondition.
func TestLabPaced(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN) to build network namespaces and TUN devices")
	}
	if testing.Short() {
		t.Skip("lab test")
	}
	plan := testPlan(t)
	for _, c := range []struct {
		name, up, down string
		cc             string
		reason         string // the FAIL's reason must say this
	}{
		{"clean", "rate=20Mbit delay=10ms limit=100p", "rate=20Mbit delay=10ms", "", ""},
		// CUBIC halves its window at each loss: at 1 % it cannot hold
		// 10 Mbit/s at 20 ms, and the rate FAILs first.
		{"loss", "rate=20Mbit delay=10ms limit=100p loss=1%", "rate=20Mbit delay=10ms", "", ""},
		// BBR holds the rate through random loss: the SPRT FAILs on
		// the marks (retransmissions − DSACK duplicates).
		{"loss-bbr", "rate=20Mbit delay=10ms limit=100p loss=1%", "rate=20Mbit delay=10ms", "bbr", "SPRT"},
		{"slow", "rate=5Mbit delay=10ms limit=100p", "rate=20Mbit delay=10ms", "", "rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			lp := upPath(t, "mbm"+c.name, c.up, c.down)
			want := expected(lp.lab.Truth(), plan, DefaultPrecondition)
			if want == "" {
				t.Fatalf("the configured path %+v gives no expected verdict", lp.lab.Truth())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			res, err := Run(ctx, Config{Streams: lp.session, Plan: plan, Tests: []string{TestPaced}, Sysctl: lp.sysctl, CongestionControl: c.cc})
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 {
				t.Fatalf("%d results", len(res))
			}
			r := res[0]
			tc := r.TCP
			t.Logf("%s: %s (%s); n %d m %d; goodput %.4g Mbit/s (%.4f × target), min window rate %.4g Mbit/s, growth %.2f s, test %.2f s, retrans %d dsack %d, %d samples every %.1f ms (max gap %.1f ms), cc %s, rwnd %.1f %% sndbuf %.1f %% notsent-empty %.1f %%",
				c.name, r.Verdict, r.Reason, r.Packets, r.Marks, tc.GoodputBps/1e6, tc.GoodputBps/plan.RateBps, tc.MinWindowRateBps/1e6,
				tc.GrowthS, tc.TestS, tc.Retrans, tc.DSACKDups, tc.Samples, tc.SampleIntervalMs, tc.MaxSampleGapMs, tc.CongestionControl,
				tc.RwndLimitedPct, tc.SndbufLimitedPct, tc.NotsentEmptyPct)
			if r.Verdict != want {
				t.Fatalf("verdict %s, want %s from the configured path", r.Verdict, want)
			}
			if c.reason != "" && !strings.Contains(r.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", r.Reason, c.reason)
			}
			if want == "PASS" {
				if g := tc.GoodputBps / plan.RateBps; math.Abs(g-1) > 0.02 {
					t.Errorf("goodput %.4g Mbit/s is %.4f × the target: want within 2 %%", tc.GoodputBps/1e6, g)
				}
				if r.Packets < plan.CheapestPass {
					t.Errorf("PASS after %d packets, fewer than the cheapest PASS %d", r.Packets, plan.CheapestPass)
				}
			}
			if cc := cmp.Or(c.cc, DefaultCongestionControl); tc.CongestionControl != cc || tc.SlowStartAfterIdle != 0 {
				t.Errorf("congestion control %q, slow start after idle %d: want %s, 0", tc.CongestionControl, tc.SlowStartAfterIdle, cc)
			}
		})
	}
}
