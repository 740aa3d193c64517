package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/librespeed"
	"github.com/sonde-project/sonde/internal/protocol"
)

// TestServerList: the list is served in LibreSpeed's format, and the
// page's CSP lets it connect to the listed servers (both schemes of a
// scheme-relative entry), nothing else.
func TestServerList(t *testing.T) {
	list := []librespeed.Server{{ID: 1, Name: "B", Server: "http://198.18.0.2:8080/"}, {ID: 2, Name: "C", Server: "//198.18.0.3/"}}
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", Servers: list})
	code, body := get(t, "http://"+addr+PathServers)
	var got []librespeed.Server
	if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil || len(got) != 2 || got[1].Server != "//198.18.0.3/" {
		t.Fatalf("%d %s %v", code, body, err)
	}
	r, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	csp := r.Header.Get("Content-Security-Policy")
	want := "connect-src 'self' http://198.18.0.2:8080 ws://198.18.0.2:8080 http://198.18.0.3 https://198.18.0.3 ws://198.18.0.3 wss://198.18.0.3"
	if !strings.Contains(csp, want) {
		t.Errorf("CSP %q lacks %q", csp, want)
	}
	_, addr = start(t, Config{PerIPPerMinute: -1, UDPAddr: "off"})
	if code, body := get(t, "http://"+addr+PathServers); code != http.StatusOK || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("no list: %d %s", code, body)
	}
}

// TestCORS: only the configured origins get CORS headers; their preflight
// is answered without admission, and the request it clears still goes
// through it (a private server's 401 reaches the page, readable).
func TestCORS(t *testing.T) {
	const page = "http://198.18.0.1:8080"
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off", CORSOrigins: []string{page}, Token: "secret"})
	do := func(method, path, origin string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{"client":"test"}`))
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r
	}
	r := do(http.MethodOptions, protocol.PathSessions+"/x", page, "Access-Control-Request-Method", "DELETE")
	if r.StatusCode != http.StatusNoContent || r.Header.Get("Access-Control-Allow-Origin") != page ||
		!strings.Contains(r.Header.Get("Access-Control-Allow-Methods"), "DELETE") || r.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight: %d %v", r.StatusCode, r.Header)
	}
	r = do(http.MethodPost, protocol.PathSessions, page)
	if r.StatusCode != http.StatusUnauthorized || r.Header.Get("Access-Control-Allow-Origin") != page {
		t.Errorf("a listed page without the token: %d %v, want 401 it can read", r.StatusCode, r.Header)
	}
	r = do(http.MethodGet, protocol.PathPing, page)
	if r.StatusCode != http.StatusOK || r.Header.Get("Timing-Allow-Origin") != page {
		t.Errorf("ping: %d %v", r.StatusCode, r.Header)
	}
	for _, o := range []string{"http://198.18.0.9:8080", ""} {
		r = do(http.MethodOptions, protocol.PathSessions+"/x", o, "Access-Control-Request-Method", "DELETE")
		if r.Header.Get("Access-Control-Allow-Origin") != "" || r.StatusCode == http.StatusNoContent {
			t.Errorf("origin %q: %d %v", o, r.StatusCode, r.Header)
		}
	}
	// Outside the API (the page itself) no CORS headers.
	if r = do(http.MethodGet, "/", page); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("page: %v", r.Header)
	}
	for _, bad := range [][]string{{"198.18.0.1"}, {"http://h/path"}, {"ftp://h"}, {"http://u@h"}} {
		c := Config{CORSOrigins: bad}
		if err := c.Validate(); err == nil {
			t.Errorf("origins %q accepted", bad)
		}
	}
}
