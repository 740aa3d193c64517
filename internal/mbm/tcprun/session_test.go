package tcprun

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// TestSessionToken: a wrong token is one line from the server; the right
// one opens upload streams whose socket is reachable.
func TestSessionToken(t *testing.T) {
	addr := servertest.Start(t, server.Config{Token: "sesame", PerIPPerMinute: -1, WebRTCPort: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Dial(ctx, Server{URL: addr, Token: "wrong"}); err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("wrong token: %v, want one line", err)
	}
	s, err := Dial(ctx, Server{URL: addr, Token: "sesame", DurationS: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if time.Until(s.Deadline()) <= 0 {
		t.Errorf("session deadline %v is past", s.Deadline())
	}
	c, err := s.OpenUpload(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*net.TCPConn); !ok {
		t.Errorf("upload stream is a %T, want the *net.TCPConn itself", c)
	}
}

// TestConfigRefused: settings a run cannot use are refused with a line
// naming them, before any stream is opened.
func TestConfigRefused(t *testing.T) {
	plan := testPlan(t)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Plan: plan}, "stream opener"},
		{Config{Streams: noStreams{}}, "no plan"},
		{Config{Streams: noStreams{}, Plan: plan, Tests: []string{"8.2.1"}}, "the TCP tests are"},
		{Config{Streams: noStreams{}, Plan: plan, Derate: 1.5}, "derate"},
		{Config{Streams: noStreams{}, Plan: plan, Precondition: 2}, "precondition"},
		{Config{Streams: noStreams{}, Plan: plan, SampleInterval: time.Second}, "sampling interval"},
		{Config{Streams: noStreams{}, Plan: plan, MinGrowth: 2 * time.Second, MaxGrowth: time.Second}, "growth period"},
		{Config{Streams: noStreams{}, Plan: plan, CongestionControl: strings.Repeat("x", 16)}, "congestion control"},
	} {
		_, err := Run(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to say %q", c.cfg, err, c.want)
		}
	}
}

type noStreams struct{}

func (noStreams) OpenUpload(context.Context, string) (net.Conn, error) {
	panic("a refused configuration opened a stream")
}

// TestRunLoopback runs 8.1.1 at 10 Mbit/s over loopback, a path with no
// loss and far more rate: it PASSes after at least the cheapest PASS,
// paced at the target. The goodput is only bounded loosely here (a
// loaded machine can slow the sender); the 2 % bar is the lab's.
func TestRunLoopback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_MAX_PACING_RATE and TCP_INFO are Linux's")
	}
	addr := servertest.Start(t, server.Config{PerIPPerMinute: -1, WebRTCPort: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plan := testPlan(t)
	s, err := Dial(ctx, Server{URL: addr, DurationS: 30, MSS: plan.MTU - plan.HeaderOverhead})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := Run(ctx, Config{Streams: s, Plan: plan, Tests: []string{TestPaced}, MinGrowth: 500 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	t.Logf("%s %s: %s; goodput %.4g Mbit/s, pacing %.4g Mbit/s, MSS %d", r.ID, r.Verdict, r.Reason, r.TCP.GoodputBps/1e6, r.TCP.PacingRateBps/1e6, r.TCP.MSS)
	if r.Verdict != "PASS" || r.Packets < plan.CheapestPass || r.Marks != 0 {
		t.Fatalf("%s after %d packets, %d marks: want PASS after ≥ %d clean packets", r.Verdict, r.Packets, r.Marks, plan.CheapestPass)
	}
	if r.TCP.MSS != plan.MTU-plan.HeaderOverhead {
		t.Errorf("MSS %d with the clamp, want the target's payload %d", r.TCP.MSS, plan.MTU-plan.HeaderOverhead)
	}
	if p := r.TCP.PacingRateBps; p < plan.RateBps || p > 1.01*plan.RateBps {
		t.Errorf("pacing rate %.4g bit/s for a %.4g bit/s target", p, plan.RateBps)
	}
	if g := r.TCP.GoodputBps / plan.RateBps; g > 1.05 {
		t.Errorf("goodput %.4f × the target through a pacing cap", g)
	}
}

// testLogger logs to the test.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// TestRunServerGone: the server going away mid-test ends the test as an
// ERROR that says so, with the counts measured so far kept.
func TestRunServerGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SO_MAX_PACING_RATE and TCP_INFO are Linux's")
	}
	srv := servertest.Run(t, server.Config{PerIPPerMinute: -1, WebRTCPort: -1}, servertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plan := testPlan(t)
	s, err := Dial(ctx, Server{URL: srv.Addr, DurationS: 30, MSS: plan.MTU - plan.HeaderOverhead})
	if err != nil {
		t.Fatal(err)
	}
	// A target RTT of 1 s makes R large: no decision in the second
	// before the server goes.
	slow, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: 10e6, RTT: time.Second, MTU: 1500, HeaderOverhead: 52}, Alpha: 0.05, Beta: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(1500*time.Millisecond, srv.Stop)
	res, err := Run(ctx, Config{Streams: s, Plan: slow, Tests: []string{TestPaced}, MinGrowth: 200 * time.Millisecond, RateWindow: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	t.Logf("%s: %s; n %d", r.Verdict, r.Reason, r.Packets)
	if r.Verdict != "ERROR" || !strings.Contains(r.Reason, "upload stream failed") {
		t.Fatalf("verdict %s (%s), want ERROR saying the stream failed", r.Verdict, r.Reason)
	}
	if r.Packets == 0 || r.TCP.TestS <= 0 {
		t.Errorf("n %d, test period %.2f s: the counts so far are not kept", r.Packets, r.TCP.TestS)
	}
}

// TestWindowedOldServer: a server without TCP MBM sessions is one clear
// line: one that checks the request as a UDP one (400 on packet_bytes),
// one that grants it as UDP (no TCP port), one without MBM at all (404).
func TestWindowedOldServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		want   string
		ended  bool // the client ended the UDP session granted by mistake
	}{
		{"udp only", http.StatusBadRequest, `{"error":"MBM session: packet_bytes 0: want 40 to 8972"}`, "does not run MBM over TCP", false},
		{"udp grant", http.StatusOK, `{"id":"x","token":7,"port":4000,"packets":10,"duration_s":5}`, "does not run MBM over TCP", true},
		{"no mbm", http.StatusNotFound, `404 page not found`, "does not support MBM", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ended atomic.Bool
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == mbmwire.PathSessions+"/x/end" {
					ended.Store(true)
				}
				if r.URL.Path == protocol.PathSessions {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(`{"id":"s1","max_duration_s":60}`))
					return
				}
				if strings.HasPrefix(c.body, "{") {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer ts.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Dial(ctx, Server{URL: ts.URL, DurationS: 10})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.OpenWindowed(ctx, WindowRequest{Test: TestWindowed, RateBps: 1e7, TargetRTT: 20 * time.Millisecond, MTU: 1500, Duration: 10 * time.Second, WindowBytes: 26064})
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line saying %q", err, c.want)
			}
			if ended.Load() != c.ended {
				t.Errorf("session ended: %v, want %v", ended.Load(), c.ended)
			}
		})
	}
}
