package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// routeRequest builds a request for pattern ("[METHOD ]/path/{wild}") with
// every wildcard filled in by fill, and body for a method that takes one.
func routeRequest(t *testing.T, addr, pattern, fill, body string) *http.Request {
	t.Helper()
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	path = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, fill)
	var rd io.Reader
	if method == http.MethodPost || method == http.MethodPut {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		t.Fatalf("%s: %v", pattern, err)
	}
	return req
}

// TestEveryRouteAdmitted walks the server's whole route table: every
// route declares a policy; on a private server every route that starts
// work refuses a missing and a wrong token (401) before it reads the
// request, every route inside admitted work refuses an ID no admission
// gave, and no route that takes a body is public. A route added later is
// in the table by construction (routeMux has no other way to mount one).
func TestEveryRouteAdmitted(t *testing.T) {
	s, addr := start(t, Config{Token: "s3cret", PerIPPerMinute: -1, TokenFailBurst: 1000,
		UDPAddr: "127.0.0.1:0", MBMAddr: "127.0.0.1:0", WebRTCPort: -1})
	routes := s.mux.routes()
	if len(routes) < 15 {
		t.Fatalf("route table holds %d routes; the server mounts more", len(routes))
	}
	c := clientFrom("127.0.0.1")
	seen := map[policy]int{}
	for _, rt := range routes {
		seen[rt.policy]++
		switch rt.policy {
		case policyAdmit:
			// A body each start route would accept with the token: the
			// refusal must come from the token, not from the body.
			for _, auth := range []struct{ name, header, query string }{
				{"no token", "", ""}, {"wrong bearer", "Bearer guess", ""}, {"wrong query token", "", "guess"},
			} {
				req := routeRequest(t, addr, rt.pattern, "x", `{"client":"t","duration_s":1,"interval_us":10000,"packet_bytes":64}`)
				if auth.header != "" {
					req.Header.Set("Authorization", auth.header)
				}
				if auth.query != "" {
					req.URL.RawQuery = "token=" + auth.query
				}
				st, msg := do(t, c, req)
				if st != http.StatusUnauthorized || msg == "" {
					t.Errorf("%s, %s: %d %q, want 401 and the reason", rt.pattern, auth.name, st, msg)
				}
			}
		case policySession:
			req := routeRequest(t, addr, rt.pattern, "nosuchsession0", `{}`)
			req.Header.Set("Authorization", "Bearer guess")
			if st, msg := do(t, c, req); st/100 != 4 {
				t.Errorf("%s with an ID no admission gave: %d %q, want a 4xx refusal", rt.pattern, st, msg)
			}
		case policyPublic, policyProbe:
			if m, _, ok := strings.Cut(rt.pattern, " "); ok && m != http.MethodGet && m != http.MethodHead {
				t.Errorf("%s is public but takes a %s: declare it admit or session", rt.pattern, m)
			}
		default:
			t.Errorf("route %q declares no admission policy (%v)", rt.pattern, rt.policy)
		}
	}
	if seen[policyAdmit] < 5 || seen[policySession] < 5 {
		t.Errorf("policies %v: sessions, UDP, MBM and ndt7 start work; streams and reports act in it", seen)
	}
}

// do sends req and returns its status and error reason.
func do(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	var er protocol.ErrorReply
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	_ = json.Unmarshal(b, &er)
	return resp.StatusCode, er.Error
}

// TestMonitorSessionsNeedToken: on a private server, monitor sessions
// without the token or with a wrong one are refused, from many addresses
// (the per-IP monitor cap alone would let 8 addresses fill every slot),
// so they cannot use up the monitor slots: a monitor with the right token
// still gets one afterwards.
func TestMonitorSessionsNeedToken(t *testing.T) {
	_, addr := start(t, Config{Token: "s3cret", PerIPPerMinute: -1, TokenFailBurst: 1000, UDPAddr: "127.0.0.1:0"})
	const body = `{"monitor":true,"duration_s":86400,"interval_us":100000,"packet_bytes":64}`
	try := func(src, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+stamp.PathSessions, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return do(t, clientFrom(src), req)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted := 0
	for i := 0; i < maxMonitorSessions; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := ""
			if i%2 == 1 {
				token = "guess"
			}
			st, _ := try(fmt.Sprintf("127.0.%d.%d", 10+i/32, 1+i%32), token)
			if st == http.StatusOK {
				mu.Lock()
				granted++
				mu.Unlock()
			}
		}()
		if i%16 == 15 {
			wg.Wait() // 16 at a time: the test's own connections stay few
		}
	}
	wg.Wait()
	if granted > 0 {
		t.Errorf("%d of %d monitor sessions granted without the token", granted, maxMonitorSessions)
	}
	if st, msg := try("127.0.99.1", "s3cret"); st != http.StatusOK {
		t.Fatalf("monitor with the right token after the flood: %d %q, want 200", st, msg)
	}
}

// TestRefusalsSayWhy: every kind of refusal carries the server's reason in
// the JSON error body, and Retry-After where trying again can succeed.
func TestRefusalsSayWhy(t *testing.T) {
	_, addr := start(t, Config{MaxConcurrent: 1, PerIPPerMinute: -1, UDPAddr: "127.0.0.1:0", MBMAddr: "off", WebRTCPort: -1})
	c := clientFrom("127.0.0.1")
	post := func(path, body string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, strings.NewReader(body))
		return req
	}
	check := func(name string, req *http.Request, status int, retry bool) {
		t.Helper()
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer resp.Body.Close()
		var er protocol.ErrorReply
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			json.Unmarshal(b, &er) != nil || er.Error == "" {
			t.Errorf("%s: %d %s %q, want %d with the JSON error body", name, resp.StatusCode, resp.Header.Get("Content-Type"), b, status)
		}
		if got := resp.Header.Get("Retry-After") != ""; got != retry {
			t.Errorf("%s: Retry-After %q, want one: %v", name, resp.Header.Get("Retry-After"), retry)
		}
	}
	check("body too large", post(protocol.PathSessions, `{"client":"`+strings.Repeat("x", 70<<10)+`"}`), http.StatusRequestEntityTooLarge, false)
	check("bad body", post(protocol.PathSessions, `{`), http.StatusBadRequest, false)
	if st, msg := do(t, c, post(protocol.PathSessions, `{"client":"t"}`)); st != http.StatusOK {
		t.Fatalf("first session: %d %q", st, msg)
	}
	check("server full", post(protocol.PathSessions, `{"client":"t"}`), http.StatusTooManyRequests, true)
	const mon = `{"monitor":true,"duration_s":60,"interval_us":100000,"packet_bytes":64}`
	for i := 0; i < maxMonitorSessionsPerIP; i++ {
		if st, msg := do(t, c, post(stamp.PathSessions, mon)); st != http.StatusOK {
			t.Fatalf("monitor session %d: %d %q", i, st, msg)
		}
	}
	check("monitor cap", post(stamp.PathSessions, mon), http.StatusServiceUnavailable, true)
}
