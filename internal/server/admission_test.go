package server

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/ndt7"
	"github.com/sonde-project/sonde/internal/protocol"
)

// ndt7Try sends an ndt7 download upgrade request with token from src and
// returns the status and Retry-After.
func ndt7Try(t *testing.T, addr, src, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+ndt7.DownloadPath+"?token="+token, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	req.Header.Set("Sec-WebSocket-Protocol", ndt7.Subprotocol)
	resp, err := clientFrom(src).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestNDT7TokenFailuresLimited: ndt7 with a wrong token gets 401 (not 403)
// and shares the per-IP failed-token bucket with sonde's own tests: after
// the burst, spent partly on each, ndt7 gets 429 with Retry-After, the
// right token included; /metrics counts the failures and the 429s.
func TestNDT7TokenFailuresLimited(t *testing.T) {
	const burst = 6
	_, addr := start(t, Config{Token: "s3cret", PerIPPerMinute: -1, TokenFailRate: 1, TokenFailBurst: burst, UDPAddr: "off"})
	for i := 0; i < burst/2; i++ {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+protocol.PathSessions, strings.NewReader(`{"client":"test"}`))
		req.Header.Set("Authorization", "Bearer guess")
		resp, err := clientFrom("127.0.0.1").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("sonde session, wrong token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	for i := burst / 2; i < burst; i++ {
		if st, _ := ndt7Try(t, addr, "127.0.0.1", "guess"); st != http.StatusUnauthorized {
			t.Fatalf("ndt7, wrong token %d: %d, want 401", i, st)
		}
	}
	st, ra := ndt7Try(t, addr, "127.0.0.1", "guess")
	if st != http.StatusTooManyRequests {
		t.Fatalf("ndt7, wrong token after the burst: %d, want 429", st)
	}
	if wait, err := strconv.Atoi(ra); err != nil || wait < 1 || wait > 2 {
		t.Fatalf("ndt7 Retry-After %q, want 1–2 s", ra)
	}
	if st, _ := ndt7Try(t, addr, "127.0.0.1", "s3cret"); st != http.StatusTooManyRequests {
		t.Fatalf("ndt7, right token while limited: %d, want 429", st)
	}
	if st, _ := ndt7Try(t, addr, "127.0.0.2", "guess"); st != http.StatusUnauthorized {
		t.Fatalf("ndt7, wrong token from another IP: %d, want 401", st)
	}
	m := scrape(t, addr)
	if got := m["sonde_token_failures_total"]; got != burst+1 {
		t.Errorf("sonde_token_failures_total %v, want %d", got, burst+1)
	}
	if got := m["sonde_token_rate_limited_total"]; got != 2 {
		t.Errorf("sonde_token_rate_limited_total %v, want 2", got)
	}
}

// TestConnectionsRefusedMetric: connections over the per-IP cap, then over
// the total cap, are counted on /metrics by reason.
func TestConnectionsRefusedMetric(t *testing.T) {
	const perIP, total = 3, 5
	s, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", MaxConnsPerIP: perIP, MaxConns: total})
	dial := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// perIP held from .1, one more refused; then .2 fills the total cap
	// and .3's first connection is refused by it.
	for range perIP {
		dial("127.0.0.1")
	}
	waitConns(t, s, "127.0.0.1", perIP)
	// A connection past the per-IP cap may be taken on probation (the
	// free test slots leave room for requests that start a test): its
	// request, which starts nothing, is refused as the cap's.
	refusedOnce := func(src string) {
		c := dial(src)
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: sonde\r\n\r\n")
		if got, err := io.ReadAll(c); err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 503 ") {
			t.Fatalf("a connection from %s over a cap: read %q, %v; want a 503 and the close", src, got, err)
		}
	}
	refusedOnce("127.0.0.1")
	for range total - perIP {
		dial("127.0.0.2")
	}
	waitConns(t, s, "127.0.0.2", total-perIP)
	refusedOnce("127.0.0.3")
	m := gather(t, s)
	if got := m[`sonde_connections_refused_total{reason="per_ip_cap"}`]; got != 1 {
		t.Errorf("refused by the per-IP cap: %v, want 1", got)
	}
	if got := m[`sonde_connections_refused_total{reason="total_cap"}`]; got != 1 {
		t.Errorf("refused by the total cap: %v, want 1", got)
	}
}

// gather reads the server's metrics from its registry, the one /metrics
// serves, without a connection (the caps are full), as name{labels} → value.
func gather(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	mfs, err := s.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += `{` + l.GetName() + `="` + l.GetValue() + `"}`
			}
			if m.Counter != nil {
				out[name] = m.Counter.GetValue()
			}
		}
	}
	return out
}
