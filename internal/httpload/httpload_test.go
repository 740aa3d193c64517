package httpload

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/stream"
)

type counted struct {
	admits, releases atomic.Int64
}

func newReg(t *testing.T, o Options) (*Registry, *counted) {
	t.Helper()
	payload, err := stream.NewPayload()
	if err != nil {
		t.Fatal(err)
	}
	c := &counted{}
	o.Admit = func(*http.Request) (func(), error) {
		c.admits.Add(1)
		return func() { c.releases.Add(1) }, nil
	}
	g, err := New(o, payload)
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

func req(ip string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = ip + ":1000"
	return r
}

// TestOneTestPerIP: an IP's load requests join one admitted test, up to
// MaxFlows at once; another IP gets its own; the test's slot comes back
// Idle after its last request.
func TestOneTestPerIP(t *testing.T) {
	g, c := newReg(t, Options{MaxTime: 10 * time.Second, MaxFlows: 3, Idle: 50 * time.Millisecond})
	var ts []*Test
	for range 3 {
		tt, err := g.Join(req("198.18.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tt)
	}
	if _, err := g.Join(req("198.18.0.1")); err == nil {
		t.Fatal("a fourth flow joined a test capped at 3")
	} else if rej, ok := err.(*RejectError); !ok || rej.Status != http.StatusTooManyRequests || rej.RetryAfter <= 0 {
		t.Fatalf("over the flow cap: %v", err)
	}
	if _, err := g.Join(req("198.18.0.2")); err != nil {
		t.Fatal(err)
	}
	if c.admits.Load() != 2 {
		t.Fatalf("%d admissions for 2 IPs", c.admits.Load())
	}
	for _, tt := range ts {
		tt.Leave()
	}
	deadline := time.Now().Add(3 * time.Second)
	for c.releases.Load() < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the idle test kept its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if g.Active() != 1 {
		t.Fatalf("%d tests active, want the other IP's", g.Active())
	}
}

// TestSlowUploaderCannotHoldSlot: a client trickling an upload loses it
// at the test's deadline, and the slot comes back.
func TestSlowUploaderCannotHoldSlot(t *testing.T) {
	g, c := newReg(t, Options{MaxTime: 300 * time.Millisecond, Idle: 10 * time.Millisecond})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tt, err := g.Join(r)
		if err != nil {
			WriteReject(w, err)
			return
		}
		defer tt.Leave()
		if _, err := g.Receive(w, r, tt); err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
	}))
	defer srv.Close()
	pr, pw := io.Pipe()
	go func() {
		for range 100 { // 10 s of a byte every 100 ms, unless cut
			if _, err := pw.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		pw.Close()
	}()
	start := time.Now()
	resp, err := http.Post(srv.URL, "application/octet-stream", pr)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("a trickled upload past the deadline was answered 200")
		}
	}
	pr.CloseWithError(io.EOF)
	for c.releases.Load() != 1 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("slot still held 5 s after a 0.3 s limit")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRejectHeaders: 429 always carries a Retry-After.
func TestRejectHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteReject(rec, &RejectError{Status: http.StatusTooManyRequests, Reason: "full"})
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "5" || !strings.Contains(rec.Body.String(), "full") {
		t.Fatalf("%d %q %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	rec = httptest.NewRecorder()
	WriteReject(rec, &RejectError{Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond})
	if rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("Retry-After %q for 1.5 s", rec.Header().Get("Retry-After"))
	}
	rec = httptest.NewRecorder()
	WriteReject(rec, &RejectError{Status: http.StatusUnauthorized, Reason: "token"})
	if rec.Code != 401 || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("401: %d %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}
