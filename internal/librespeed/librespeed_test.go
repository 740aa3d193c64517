package librespeed

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/httpload"
)

func TestDescribe(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1":       "127.0.0.1 - localhost IPv4 access",
		"::1":             "::1 - localhost IPv6 access",
		"::ffff:10.1.2.3": "10.1.2.3 - private IPv4 access",
		"172.16.0.9":      "172.16.0.9 - private IPv4 access",
		"172.32.0.9":      "172.32.0.9",
		"192.168.1.1":     "192.168.1.1 - private IPv4 access",
		"169.254.3.4":     "169.254.3.4 - link-local IPv4 access",
		"fe80::1":         "fe80::1 - link-local IPv6 access",
		"fd00::5":         "fd00::5 - private IPv6 access",
		"100.64.0.1":      "100.64.0.1 - CGNAT IPv4 access",
		"100.108.0.1":     "100.108.0.1 - CGNAT IPv4 access", // speedtest-go's pattern misses it
		"100.127.255.254": "100.127.255.254 - CGNAT IPv4 access",
		"100.128.0.1":     "100.128.0.1",
		"198.18.0.1":      "198.18.0.1",
		"not an ip":       "not an ip",
	} {
		if got := Describe(in); got != want {
			t.Errorf("Describe(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChunks(t *testing.T) {
	for in, want := range map[string]int{"": 4, "0": 4, "x": 4, "1": 1, "100": 100, "1024": 1024,
		"1025": 1024, "99999999999999999999": 1024, "-3": 0, strings.Repeat("9", 100): 1024} {
		if got := Chunks(in); got != want {
			t.Errorf("Chunks(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestEndpointsAsClientsUseThem: every path of both backends answers; CORS
// preflight and headers as speedtest-go sends them; garbage is ckSize MiB
// and not compressed; the server list names this server so that
// librespeed-cli, fetching <list URL>/.well-known/librespeed, finds it.
func TestEndpointsAsClientsUseThem(t *testing.T) {
	b := newBackend(t, 0, nil)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, p := range Paths("garbage") {
		resp, err := c.Get(b.srv.URL + p + "?r=0.5&ckSize=2")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n != 2<<20 || resp.Header.Get("Content-Encoding") != "" {
			t.Fatalf("%s: %s, %d bytes, encoding %q", p, resp.Status, n, resp.Header.Get("Content-Encoding"))
		}
	}
	for _, p := range Paths("empty") {
		resp, err := c.Post(b.srv.URL+p+"?r=1", "application/octet-stream", bytes.NewReader(make([]byte, 1<<20)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %s: %s", p, resp.Status)
		}
	}
	for _, p := range Paths("getIP") {
		resp, err := c.Get(b.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		var ip map[string]any
		err = json.NewDecoder(resp.Body).Decode(&ip)
		resp.Body.Close()
		if err != nil || ip["processedString"] == nil || ip["rawIspInfo"] != "" {
			t.Fatalf("%s: %v %v", p, ip, err)
		}
	}
	// Preflight from a page on another origin.
	req, _ := http.NewRequest(http.MethodOptions, b.srv.URL+"/empty", nil)
	req.Header.Set("Origin", "https://speed.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 200 || h.Get("Access-Control-Allow-Origin") != "*" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "POST") || h.Get("Access-Control-Allow-Headers") != "content-type" {
		t.Fatalf("preflight: %s %v", resp.Status, h)
	}
	// The server list.
	resp, err = c.Get(b.srv.URL + WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	var list []Server
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list) != 1 {
		t.Fatalf("server list: %v %v", list, err)
	}
	srv, _ := url.Parse(list[0].Server)
	for _, rel := range []string{list[0].DlURL, list[0].UlURL, list[0].PingURL, list[0].GetIPURL} {
		u := srv.ResolveReference(&url.URL{Path: rel})
		resp, err := c.Get(u.String() + "?ckSize=1")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s from the list: %s", u, resp.Status)
		}
	}
}

// TestLoadLimits: garbage and uploads take their test from the admission
// (429 with Retry-After when refused) and stop at the byte limit.
func TestLoadLimits(t *testing.T) {
	refuse := func(*http.Request) (func(), error) {
		return nil, &httpload.RejectError{Status: http.StatusTooManyRequests, Reason: "busy"}
	}
	b := newBackend(t, 0, refuse)
	resp, err := http.Get(b.srv.URL + "/garbage?ckSize=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("refused garbage: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	// Pings need no test.
	resp, err = http.Get(b.srv.URL + "/empty")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("ping on a full server: %s", resp.Status)
	}
	const limit = 3 << 20
	b = newBackend(t, limit, nil)
	resp, err = http.Get(b.srv.URL + "/garbage?ckSize=10")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n > limit {
		t.Fatalf("garbage moved %d bytes past a %d limit", n, limit)
	}
}
