package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// streamStatus asks for a stream and returns the reply's status and error
// text (empty for 101).
func streamStatus(t *testing.T, addr, id, kind string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s/%s/%s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n",
		protocol.PathSessions, id, kind, protocol.StreamUpgrade)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, errorOf(t, resp)
}

// drain reads a download stream to its end and returns its payload bytes.
func drain(c net.Conn, br *bufio.Reader) int64 {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var n int64
	fr := protocol.NewReader(br, 0)
	for range 1 << 20 {
		if _, _, err := fr.Next(func(k int) { n += int64(k) }); err != nil {
			break
		}
	}
	return n
}

// pump writes 64 KiB data frames until the server stops taking them
// (bounded in count and time).
func pump(c net.Conn) {
	frame := make([]byte, protocol.HeaderLen+64<<10)
	protocol.PutHeader(frame, protocol.FrameData, 64<<10)
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	for range 100000 {
		if _, err := c.Write(frame); err != nil {
			return
		}
	}
}

// --max-bytes is one budget per test: all streams, both directions.
func TestByteLimitPerTest(t *testing.T) {
	t.Run("download streams", func(t *testing.T) {
		// Far above what the socket buffers of the streams opened first
		// hold before the last one opens.
		const limit = 64 << 20
		_, addr := start(t, Config{MaxBytes: limit, PerIPPerMinute: -1})
		_, ses := createSession(t, addr, nil)
		const streams = 4
		conns := make([]net.Conn, streams)
		brs := make([]*bufio.Reader, streams)
		for i := range streams {
			conns[i], brs[i] = upgrade(t, addr, ses.ID, protocol.KindDownload)
		}
		var wg sync.WaitGroup
		got := make([]int64, streams)
		for i := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conns[i].Close()
				got[i] = drain(conns[i], brs[i])
			}()
		}
		wg.Wait()
		var total int64
		for _, n := range got {
			total += n
		}
		if total != limit {
			t.Fatalf("%d download streams moved %d bytes (%v) under a %d-byte test limit", streams, total, got, limit)
		}
		for _, kind := range []string{protocol.KindDownload, protocol.KindUpload} {
			st, msg := streamStatus(t, addr, ses.ID, kind)
			if st != http.StatusForbidden || !strings.Contains(msg, "byte limit") {
				t.Errorf("%s after the budget is spent: %d %q, want 403 naming the byte limit", kind, st, msg)
			}
		}
		rep := fetchReport(t, addr, ses.ID)
		for _, f := range rep.Flows {
			if f.Limit != protocol.LimitBytes || !strings.Contains(f.Error, "byte limit") {
				t.Errorf("flow %d: limit %q error %q, want the byte limit", f.ID, f.Limit, f.Error)
			}
		}
	})
	t.Run("upload streams", func(t *testing.T) {
		const limit = 4 << 20
		_, addr := start(t, Config{MaxBytes: limit, PerIPPerMinute: -1})
		_, ses := createSession(t, addr, nil)
		var conns []net.Conn
		for range 3 {
			c, _ := upgrade(t, addr, ses.ID, protocol.KindUpload)
			conns = append(conns, c)
		}
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				pump(c)
			}()
		}
		wg.Wait() // every writer stopped: the server closed its streams
		rep := fetchReport(t, addr, ses.ID)
		var total int64
		for _, f := range rep.Flows {
			total += f.Bytes
			if f.Limit != protocol.LimitBytes {
				t.Errorf("upload flow %d: limit %q (error %q), want the byte limit", f.ID, f.Limit, f.Error)
			}
		}
		// The budget counts frame headers too: 8 bytes per 64 KiB frame.
		if total > limit || total < limit-4096 {
			t.Fatalf("3 upload streams: server took %d payload bytes under a %d-byte test limit", total, limit)
		}
		if st, msg := streamStatus(t, addr, ses.ID, protocol.KindDownload); st != http.StatusForbidden {
			t.Errorf("download after the upload spent the budget: %d %q, want 403", st, msg)
		}
	})
}

// The session's deadline ends its streams, and their reports say so.
func TestDurationLimitPerTest(t *testing.T) {
	_, addr := start(t, Config{MaxDuration: time.Second, PerIPPerMinute: -1})
	_, ses := createSession(t, addr, nil)
	start := time.Now()
	var wg sync.WaitGroup
	dc, dbr := upgrade(t, addr, ses.ID, protocol.KindDownload)
	uc, _ := upgrade(t, addr, ses.ID, protocol.KindUpload)
	wg.Add(2)
	go func() { defer wg.Done(); defer dc.Close(); drain(dc, dbr) }()
	go func() { defer wg.Done(); defer uc.Close(); pump(uc) }()
	wg.Wait()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("streams ran %v under a 1 s limit", took)
	}
	for _, f := range fetchReport(t, addr, ses.ID).Flows {
		if f.Limit != protocol.LimitDuration {
			t.Errorf("%s flow: limit %q error %q, want the duration limit", f.Kind, f.Limit, f.Error)
		}
	}
}

// waitSlot creates sessions until one is admitted (bounded) and returns how
// long that took.
func waitSlot(t *testing.T, addr string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if resp, _ := createSession(t, addr, nil); resp.StatusCode == http.StatusOK {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no test slot freed within %v", within)
	return 0
}

// Sessions without a live stream are reclaimed within seconds, not at
// their deadline.
func TestSessionReclaim(t *testing.T) {
	const idle = 500 * time.Millisecond
	t.Run("never connects", func(t *testing.T) {
		_, addr := start(t, Config{MaxConcurrent: 2, SessionIdle: idle, PerIPPerMinute: -1})
		created := time.Now()
		_, first := createSession(t, addr, nil)
		createSession(t, addr, nil)
		if resp, _ := createSession(t, addr, nil); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("third session with 2 slots: %s", resp.Status)
		}
		waitSlot(t, addr, 5*time.Second)
		if took := time.Since(created); took < idle {
			t.Errorf("slot freed after %v, before the %v idle limit", took, idle)
		}
		st, msg := streamStatus(t, addr, first.ID, protocol.KindProbe)
		if st != http.StatusGone || !strings.Contains(msg, "idle") {
			t.Errorf("stream on a reclaimed session: %d %q, want 410 naming the idle limit", st, msg)
		}
	})
	t.Run("dropped client", func(t *testing.T) {
		_, addr := start(t, Config{MaxConcurrent: 1, SessionIdle: idle, PerIPPerMinute: -1})
		_, ses := createSession(t, addr, nil)
		c, _ := upgrade(t, addr, ses.ID, protocol.KindProbe)
		// An open stream keeps the session well past the idle limit.
		time.Sleep(3 * idle)
		if resp, _ := createSession(t, addr, nil); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a session with an open stream was reclaimed: second session got %s", resp.Status)
		}
		// The client dies (kill -9: the kernel resets its sockets).
		_ = c.(*net.TCPConn).SetLinger(0)
		c.Close()
		took := waitSlot(t, addr, 5*time.Second)
		t.Logf("slot freed %v after the client's connection dropped (idle limit %v)", took.Round(10*time.Millisecond), idle)
	})
}

func TestSessionRequestValidation(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1})
	for _, c := range []struct{ body, field string }{
		{`{"duration_s":1e10}`, "duration_s"},
		{`{"duration_s":-1}`, "duration_s"},
		{`{"tcpinfo_interval_ms":1e300}`, "tcpinfo_interval_ms"},
		{`{"tcpinfo_interval_ms":-5}`, "tcpinfo_interval_ms"},
	} {
		resp, err := http.Post("http://"+addr+protocol.PathSessions, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		msg := errorOf(t, resp)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, c.field) {
			t.Errorf("%s: %s %q, want 400 naming %s", c.body, resp.Status, msg, c.field)
		}
	}
}

// udpOpen posts a UDP session request to h.
func udpOpen(h http.Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, stamp.PathSessions, strings.NewReader(body))
	req.RemoteAddr = "127.0.0.1:40000"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestUDPSessionLimits(t *testing.T) {
	s, err := New(Config{MaxDuration: 2 * time.Second, UDPAddr: "127.0.0.1:0", PerIPPerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, c := range []struct{ body, field string }{
		{`{"duration_s":1e10,"interval_us":20000,"packet_bytes":64}`, "duration_s"},
		{`{"duration_s":0,"interval_us":20000,"packet_bytes":64}`, "duration_s"},
		{`{"duration_s":5,"interval_us":1e300,"packet_bytes":64}`, "interval_us"},
		{`{"duration_s":5,"interval_us":50,"packet_bytes":64}`, "interval_us"},
	} {
		w := udpOpen(s.Handler(), c.body)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), c.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.body, w.Code, w.Body, c.field)
		}
	}
	// Longer than the limit: granted the limit, and told so.
	w := udpOpen(s.Handler(), `{"duration_s":10,"interval_us":20000,"packet_bytes":64}`)
	var rep stamp.SessionReply
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &rep) != nil {
		t.Fatalf("UDP session of 10 s: %d %s", w.Code, w.Body)
	}
	if rep.DurationS != 2 {
		t.Errorf("granted %v s, want the server's 2 s limit", rep.DurationS)
	}
	_, _ = io.Copy(io.Discard, w.Body)
}

// After Close the reflector is no longer handed out, even though it was
// running: a session opened during shutdown gets 503, not a grant on a
// socket about to close.
func TestUDPSessionRefusedAfterClose(t *testing.T) {
	s, err := New(Config{MaxDuration: 2 * time.Second, UDPAddr: "127.0.0.1:0", PerIPPerMinute: -1})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"duration_s":1,"interval_us":20000,"packet_bytes":64}`
	if w := udpOpen(s.Handler(), body); w.Code != http.StatusOK {
		t.Fatalf("before Close: %d %s", w.Code, w.Body)
	}
	s.Close()
	if w := udpOpen(s.Handler(), body); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "shutting down") {
		t.Fatalf("after Close: %d %s, want 503 shutting down", w.Code, w.Body)
	}
}

// FuzzSessionRequest: a request that passes validation converts to
// durations without overflow.
func FuzzSessionRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"duration_s":10,"tcpinfo_interval_ms":20}`, `{"duration_s":1e10}`,
		`{"tcpinfo_interval_ms":-1}`, `{"duration_s":86400,"tcpinfo_interval_ms":60000}`, `{"duration_s":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req protocol.SessionRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		if validSessionRequest(req) != nil {
			return
		}
		if d := time.Duration(req.DurationS * float64(time.Second)); d < 0 {
			t.Fatalf("accepted duration_s %g overflows: %v", req.DurationS, d)
		}
		if d := time.Duration(req.TCPInfoIntervalMs * float64(time.Millisecond)); d < 0 {
			t.Fatalf("accepted tcpinfo_interval_ms %g overflows: %v", req.TCPInfoIntervalMs, d)
		}
	})
}

// FuzzUDPSessionOpen drives the UDP session endpoint: never a 5xx for a
// request's numbers, and a grant within the server's limit.
func FuzzUDPSessionOpen(f *testing.F) {
	for _, s := range []string{`{"duration_s":1e10,"interval_us":20000,"packet_bytes":64}`,
		`{"duration_s":5,"interval_us":20000,"packet_bytes":64}`, `{"duration_s":5,"interval_us":1e300,"packet_bytes":64}`,
		`{"duration_s":1e-300,"interval_us":100,"packet_bytes":1452,"dscp":63,"ecn":3}`, `{"duration_s":-1}`, `nope`} {
		f.Add(s)
	}
	s, err := New(Config{MaxDuration: 2 * time.Second, UDPAddr: "127.0.0.1:0", PerIPPerMinute: -1, MaxConcurrent: 1000, MaxStreams: 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Close)
	f.Fuzz(func(t *testing.T, body string) {
		w := udpOpen(s.Handler(), body)
		if w.Code >= 500 {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body)
		}
		if w.Code != http.StatusOK {
			return
		}
		var rep stamp.SessionReply
		if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		if !(rep.DurationS >= 0 && rep.DurationS <= 2) {
			t.Fatalf("%q: granted %v s over a 2 s limit", body, rep.DurationS)
		}
		req := httptest.NewRequest(http.MethodDelete, stamp.PathSessions+"/"+rep.ID, nil)
		s.Handler().ServeHTTP(httptest.NewRecorder(), req)
	})
}
