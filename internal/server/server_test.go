package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

// start runs a server on a loopback port for one test.
func start(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(ctx, []net.Listener{ln}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s, ln.Addr().String()
}

func createSession(t *testing.T, addr string, hdr map[string]string) (*http.Response, protocol.SessionReply) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+protocol.PathSessions, strings.NewReader(`{"client":"test"}`))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep protocol.SessionReply
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &rep); err != nil {
			t.Fatalf("session reply: %v", err)
		}
	} else {
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, rep
}

// upgrade opens a raw stream; it returns the connection after the 101.
func upgrade(t *testing.T, addr, id, kind string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET %s/%s/%s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n",
		protocol.PathSessions, id, kind, protocol.StreamUpgrade)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade %s: %s", kind, resp.Status)
	}
	return c, br
}

func errorOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	var er protocol.ErrorReply
	if err := json.NewDecoder(resp.Body).Decode(&er); err != nil {
		t.Fatalf("error reply is not JSON: %v", err)
	}
	return er.Error
}

func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// settle waits (bounded) until the goroutine and descriptor counts are back
// to what they were, so leaks fail the test.
func settle(t *testing.T, goroutines, fds int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && f <= fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("leak: %d goroutines (was %d), %d fds (was %d)\n%s", g, goroutines, f, fds, buf[:n])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSurvivesMalformedAndAbruptStreams(t *testing.T) {
	http.DefaultClient.CloseIdleConnections()
	g0, f0 := runtime.NumGoroutine(), openFDs(t)
	// A subtest, so the server's cleanup has run before the leak check.
	t.Run("streams", func(t *testing.T) {
		_, addr := start(t, Config{MaxDuration: 10 * time.Second, PerIPPerMinute: -1})
		_, ses := createSession(t, addr, nil)
		cases := []struct {
			kind string
			send []byte
		}{
			{protocol.KindUpload, []byte("this is not a frame at all")},
			{protocol.KindUpload, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}}, // oversized
			{protocol.KindProbe, []byte{2, 0, 0, 0, 0, 0, 0, 99}},             // wrong probe length
			{protocol.KindUpload, []byte{1, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3}},    // truncated, then gone
			{protocol.KindDownload, nil},                                      // abrupt close while sending
			{protocol.KindDownload, []byte{7, 7, 7, 7, 7, 7, 7, 7}},           // garbage on the idle direction
		}
		for _, c := range cases {
			conn, _ := upgrade(t, addr, ses.ID, c.kind)
			if c.send != nil {
				_, _ = conn.Write(c.send)
			}
			if c.kind == protocol.KindDownload {
				time.Sleep(50 * time.Millisecond) // let the server be mid-write
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // reset, not a clean close
			}
			conn.Close()
		}
		// A valid probe still works on the same session afterwards.
		conn, br := upgrade(t, addr, ses.ID, protocol.KindProbe)
		defer conn.Close()
		if _, err := conn.Write(protocol.AppendProbe(nil, protocol.Probe{Seq: 42})); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		typ, p, err := protocol.NewReader(br, 0).Next(nil)
		if err != nil || typ != protocol.FrameProbeReply || protocol.DecodeProbeReply(p).Seq != 42 {
			t.Fatalf("probe after malformed streams: typ %d err %v", typ, err)
		}
		conn.Close()

		resp, err := http.Get("http://" + addr + protocol.PathSessions + "/" + ses.ID + "/report?wait=all")
		if err != nil {
			t.Fatal(err)
		}
		var rep protocol.Report
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(rep.Flows) != len(cases)+1 {
			t.Fatalf("report has %d flows, want %d", len(rep.Flows), len(cases)+1)
		}
		for i := 0; i < 3; i++ {
			if !strings.Contains(rep.Flows[i].Error, "malformed") {
				t.Errorf("flow %d (%s): error %q, want a malformed-frame error", i, cases[i].kind, rep.Flows[i].Error)
			}
		}
		http.DefaultClient.CloseIdleConnections()
	})
	settle(t, g0, f0)
}

func TestLimits(t *testing.T) {
	t.Run("concurrent", func(t *testing.T) {
		_, addr := start(t, Config{MaxConcurrent: 1, PerIPPerMinute: -1})
		if resp, _ := createSession(t, addr, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("first session: %s", resp.Status)
		}
		resp, _ := createSession(t, addr, nil)
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("second session: %s, want 429", resp.Status)
		}
		if msg := errorOf(t, resp); !strings.Contains(msg, "1 of 1 test slots") {
			t.Fatalf("reason %q does not name the limit", msg)
		}
	})
	t.Run("token", func(t *testing.T) {
		_, addr := start(t, Config{Token: "s3cret", PerIPPerMinute: -1})
		for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}} {
			resp, _ := createSession(t, addr, h)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(errorOf(t, resp), "token") {
				t.Fatalf("without the right token: %s", resp.Status)
			}
		}
		if resp, _ := createSession(t, addr, map[string]string{"Authorization": "Bearer s3cret"}); resp.StatusCode != http.StatusOK {
			t.Fatalf("with the token: %s", resp.Status)
		}
	})
	t.Run("per-ip", func(t *testing.T) {
		_, addr := start(t, Config{PerIPPerMinute: 2, MaxConcurrent: 10})
		for i := 0; i < 2; i++ {
			if resp, _ := createSession(t, addr, nil); resp.StatusCode != http.StatusOK {
				t.Fatalf("session %d: %s", i, resp.Status)
			}
		}
		resp, _ := createSession(t, addr, nil)
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(errorOf(t, resp), "per minute") {
			t.Fatalf("third session in a minute: %s", resp.Status)
		}
	})
	t.Run("expiry", func(t *testing.T) {
		_, addr := start(t, Config{MaxDuration: 300 * time.Millisecond, PerIPPerMinute: -1})
		_, ses := createSession(t, addr, nil)
		conn, br := upgrade(t, addr, ses.ID, protocol.KindDownload)
		defer conn.Close()
		// The download ends by itself when the session expires.
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, br); err != nil {
			t.Fatalf("download did not end cleanly at expiry: %v", err)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s/%s/upload HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n",
			protocol.PathSessions, ses.ID, protocol.StreamUpgrade)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusGone || !strings.Contains(errorOf(t, resp), "expired") {
			t.Fatalf("stream after expiry: %s", resp.Status)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		_, addr := start(t, Config{MaxBytes: 3 << 20, PerIPPerMinute: -1})
		_, ses := createSession(t, addr, nil)
		conn, br := upgrade(t, addr, ses.ID, protocol.KindDownload)
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var got int
		fr := protocol.NewReader(br, 0)
		for {
			if _, _, err := fr.Next(func(n int) { got += n }); err != nil {
				break
			}
			if got >= 3<<20 {
				break
			}
		}
		if got != 3<<20 {
			t.Fatalf("download moved %d bytes under a %d byte limit", got, 3<<20)
		}
	})
	t.Run("bad request", func(t *testing.T) {
		_, addr := start(t, Config{PerIPPerMinute: -1})
		resp, err := http.Post("http://"+addr+protocol.PathSessions, "application/json", strings.NewReader("{nope"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("malformed session request: %s", resp.Status)
		}
		r2, err := http.Get("http://" + addr + protocol.PathSessions + "/0123/download")
		if err != nil {
			t.Fatal(err)
		}
		r2.Body.Close()
		if r2.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown session: %s", r2.Status)
		}
	})
}

func TestHealthAndMetrics(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1})
	createSession(t, addr, nil)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`sonde_tests_total{kind="session",protocol="sonde"} 1`, "sonde_active_tests 1"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	resp, err = http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h["status"] != "ok" {
		t.Fatalf("/healthz: %v %v", h, err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{MaxConcurrent: -1}, {MaxBytes: -1}, {CertFile: "a"}, {MaxDuration: -time.Second}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}
