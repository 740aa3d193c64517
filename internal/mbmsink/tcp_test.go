package mbmsink

import (
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/mbmwire"
)

func tcpRequest() mbmwire.SessionRequest {
	return mbmwire.SessionRequest{Client: "test", Test: "8.1.2", Transport: mbmwire.TransportTCP, RateBps: 10e6,
		TargetRTTMs: 20, TargetMTU: 1500, DurationS: 5, ReceiveWindowBytes: 18 * 1448}
}

// openTCPSession opens a TCP session on the server at base.
func openTCPSession(t *testing.T, base string, req mbmwire.SessionRequest) mbmwire.SessionReply {
	t.Helper()
	var rep mbmwire.SessionReply
	if code := postJSON(t, base+mbmwire.PathSessions, req, &rep); code != http.StatusOK {
		t.Fatalf("open: %d", code)
	}
	if rep.TCPPort == 0 || rep.Token == 0 {
		t.Fatalf("grant without a TCP port or token: %+v", rep)
	}
	return rep
}

// dialSession connects to the session's port from local (nil: any
// address) and writes token.
func dialSession(t *testing.T, rep mbmwire.SessionReply, local string, token uint64) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 2 * time.Second}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(rep.TCPPort)))
	if err != nil {
		t.Fatal(err)
	}
	var b [mbmwire.TCPTokenLen]byte
	binary.BigEndian.PutUint64(b[:], token)
	if _, err := c.Write(b[:]); err != nil {
		t.Fatal(err)
	}
	return c
}

func endTCPSession(t *testing.T, base string, rep mbmwire.SessionReply) mbmwire.Report {
	t.Helper()
	var r mbmwire.Report
	if code := postJSON(t, base+mbmwire.PathSessions+"/"+rep.ID+"/end", mbmwire.EndRequest{Verdict: "PASS"}, &r); code != http.StatusOK {
		t.Fatalf("end: %d", code)
	}
	if r.TCP == nil {
		t.Fatalf("end report without the TCP readback: %+v", r)
	}
	return r
}

// closedByServer says whether the server closed c (EOF or reset) within 2 s.
func closedByServer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestMBMTCPSession: the connection with the session's token is counted
// to the byte; the listener's SO_RCVBUF is the rule's, doubled, on the
// connection too; the window the server advertised is read back.
func TestMBMTCPSession(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	_, _, base := mbmServer(t, Options{})
	req := tcpRequest()
	rep := openTCPSession(t, base, req)
	set := mbmwire.ReceiveBufferFor(req.ReceiveWindowBytes)
	if rep.ReceiveBufferBytes != 2*set {
		t.Errorf("SO_RCVBUF read back %d, want %d (the rule's %d, doubled)", rep.ReceiveBufferBytes, 2*set, set)
	}
	c := dialSession(t, rep, "", rep.Token)
	data := make([]byte, 1<<20)
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	c.Close()
	r := endTCPSession(t, base, rep)
	tc := r.TCP
	t.Logf("readback: %+v", *tc)
	if !tc.Connected || tc.Bytes != int64(len(data)) || r.Bytes != tc.Bytes {
		t.Errorf("connected %v, %d bytes (report %d): want true, %d", tc.Connected, tc.Bytes, r.Bytes, len(data))
	}
	if tc.ReceiveBufferSetBytes != set || tc.ReceiveBufferBytes != 2*set || tc.ReceiveWindowBytes != req.ReceiveWindowBytes {
		t.Errorf("buffers set %d held %d window %d: want %d, %d, %d", tc.ReceiveBufferSetBytes, tc.ReceiveBufferBytes, tc.ReceiveWindowBytes, set, 2*set, req.ReceiveWindowBytes)
	}
	// The window advertised is bounded by the buffer: at most the doubled
	// buffer, whatever the loopback's truesize.
	if tc.MaxRcvWndBytes == 0 || int(tc.MaxRcvWndBytes) > 2*set {
		t.Errorf("largest advertised window %d: want more than 0 and at most the held buffer %d", tc.MaxRcvWndBytes, 2*set)
	}
	if tc.Rejected != 0 {
		t.Errorf("%d connections rejected", tc.Rejected)
	}
}

// TestMBMTCPRejects: a connection with a wrong token, and one from
// another address than the client's, are closed; the session keeps
// waiting and takes the right one.
func TestMBMTCPRejects(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	_, _, base := mbmServer(t, Options{})
	rep := openTCPSession(t, base, tcpRequest())
	bad := dialSession(t, rep, "", rep.Token+1)
	if !closedByServer(bad) {
		t.Error("a wrong token's connection was not closed")
	}
	bad.Close()
	other := dialSession(t, rep, "127.0.0.2", rep.Token)
	if !closedByServer(other) {
		t.Error("a connection from 127.0.0.2 (the client is 127.0.0.1) was not closed")
	}
	other.Close()
	c := dialSession(t, rep, "", rep.Token)
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	r := endTCPSession(t, base, rep)
	if !r.TCP.Connected || r.TCP.Bytes != 5 || r.TCP.Rejected != 2 {
		t.Errorf("connected %v, %d bytes, %d rejected: want true, 5, 2", r.TCP.Connected, r.TCP.Bytes, r.TCP.Rejected)
	}
}

// TestMBMTCPNoConnect: a session nobody connects to closes its listener
// at the accept deadline and releases its slot; its end call gets the
// kept report.
func TestMBMTCPNoConnect(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	k, _, base := mbmServer(t, Options{})
	k.acceptTimeout = 200 * time.Millisecond
	rep := openTCPSession(t, base, tcpRequest())
	deadline := time.Now().Add(5 * time.Second)
	for {
		k.mu.Lock()
		n, open := len(k.perIP), len(k.open)
		k.mu.Unlock()
		if n == 0 && open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %d slots, %d sessions still held", n, open)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(rep.TCPPort)), time.Second); err == nil {
		c.Close()
		t.Error("the listener still accepts after its deadline")
	}
	r := endTCPSession(t, base, rep)
	if r.TCP.Connected {
		t.Error("report says connected")
	}
}

// TestMBMTCPSlowClient: a client that trickles bytes and never closes is
// ended by the end call (after the EOF wait) with its bytes counted, and
// its goroutine ends.
func TestMBMTCPSlowClient(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	k, _, base := mbmServer(t, Options{})
	rep := openTCPSession(t, base, tcpRequest())
	c := dialSession(t, rep, "", rep.Token)
	defer c.Close()
	for range 5 {
		if _, err := c.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	t0 := time.Now()
	r := endTCPSession(t, base, rep)
	if d := time.Since(t0); d > mbmEOFWait+3*time.Second {
		t.Errorf("end took %s", d)
	}
	if r.TCP.Bytes != 5 {
		t.Errorf("%d bytes, want 5", r.TCP.Bytes)
	}
	if !closedByServer(c) {
		t.Error("the server kept the connection after the end call")
	}
	waitTCP(t, k)
}

// TestMBMTCPShutdown: shutting the server down mid-session closes the
// connection and ends every TCP goroutine.
func TestMBMTCPShutdown(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	k, _, base := mbmServer(t, Options{})
	rep := openTCPSession(t, base, tcpRequest())
	rep2 := openTCPSession(t, base, tcpRequest()) // never connected
	c := dialSession(t, rep, "", rep.Token)
	defer c.Close()
	if _, err := c.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { k.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5 s")
	}
	if !closedByServer(c) {
		t.Error("the connection is still open after shutdown")
	}
	if c2, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(rep2.TCPPort)), time.Second); err == nil {
		c2.Close()
		t.Error("a session's listener still accepts after shutdown")
	}
}

// waitTCP waits (≤ 5 s) for every TCP session goroutine to end.
func waitTCP(t *testing.T, k *Sink) {
	t.Helper()
	done := make(chan struct{})
	go func() { k.tcpWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a TCP session goroutine still runs after 5 s")
	}
}

// TestMBMTCPRefusals: a window out of bounds is a 400 naming the bound;
// an unknown transport a 400.
func TestMBMTCPRefusals(t *testing.T) {
	k, _, _ := mbmServer(t, Options{})
	for _, c := range []struct {
		body, want string
	}{
		{`{"transport":"tcp","rate_bps":1e7,"duration_s":5,"receive_window_bytes":100}`, "receive_window_bytes 100: want 2048 to 4194304"},
		{`{"transport":"tcp","rate_bps":1e7,"duration_s":5,"receive_window_bytes":99999999}`, "4194304"},
		{`{"transport":"sctp","rate_bps":1e7}`, "transport"},
	} {
		rec := httptest.NewRecorder()
		k.HandleOpen(rec, httptest.NewRequest(http.MethodPost, mbmwire.PathSessions, strings.NewReader(c.body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want 400 naming %q", c.body, rec.Code, rec.Body, c.want)
		}
	}
}
