package rpm

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/stream"
)

// fixture is an RPM server over TLS with HTTP/2 on loopback, its
// admission counting tests and able to refuse them.
type fixture struct {
	srv      *httptest.Server
	load     *httpload.Registry
	admitted atomic.Int64
	refuse   atomic.Bool
	conns    atomic.Int64 // TCP connections the server accepted
}

func newFixture(t *testing.T, maxTime time.Duration, maxBytes int64) *fixture {
	t.Helper()
	payload, err := stream.NewPayload()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	f.load, err = httpload.New(httpload.Options{Protocol: "rpm", MaxTime: maxTime, MaxBytes: maxBytes,
		Idle: 200 * time.Millisecond,
		Admit: func(*http.Request) (func(), error) {
			if f.refuse.Load() {
				return nil, &httpload.RejectError{Status: http.StatusTooManyRequests, Reason: "server busy"}
			}
			f.admitted.Add(1)
			return func() {}, nil
		}}, payload)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(f.load)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	f.srv = httptest.NewUnstartedServer(mux)
	f.srv.EnableHTTP2 = true
	f.srv.Config.ConnContext = httpload.ConnContext
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// client is a client like the known ones: HTTP/2 over TLS (h2only) or
// HTTP/1.1, certificate not checked (networkQuality -k), no redirects
// followed, no transparent decompression.
func (f *fixture) client(h2only bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{InsecureSkipVerify: true},
		DisableCompression: true,
		ForceAttemptHTTP2:  h2only,
	}
	if !h2only {
		tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return errors.New("redirected") }}
}

func get(t *testing.T, c *http.Client, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestConfigAsClientsReadIt reads /.well-known/nq as goresponsiveness
// (the https_ keys, https only), Apple's networkQuality (all six keys) and
// the draft (its three) do.
func TestConfigAsClientsReadIt(t *testing.T) {
	f := newFixture(t, 5*time.Second, 0)
	c := f.client(true)
	resp := get(t, c, f.srv.URL+ConfigPath)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Fatalf("config: %s over %s, want 200 over HTTP/2", resp.Status, resp.Proto)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("config has Content-Encoding %q", ce)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("config Content-Type %q", ct)
	}
	// goresponsiveness's struct.
	var gr struct {
		Version int
		Urls    struct {
			SmallUrl  string `json:"small_https_download_url"`
			LargeUrl  string `json:"large_https_download_url"`
			UploadUrl string `json:"https_upload_url"`
		} `json:"urls"`
	}
	if err := json.Unmarshal(body, &gr); err != nil {
		t.Fatal(err)
	}
	if gr.Version != 1 {
		t.Fatalf("version %d", gr.Version)
	}
	for _, u := range []string{gr.Urls.SmallUrl, gr.Urls.LargeUrl, gr.Urls.UploadUrl} {
		if !strings.HasPrefix(u, f.srv.URL+"/") {
			t.Fatalf("URL %q is not https on the config's host %s", u, f.srv.URL)
		}
	}
	// Apple's six keys and the draft's three, equal pairwise.
	var raw struct {
		URLs map[string]string `json:"urls"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"small_download_url", "small_https_download_url"},
		{"large_download_url", "large_https_download_url"}, {"upload_url", "https_upload_url"}} {
		if raw.URLs[p[0]] == "" || raw.URLs[p[0]] != raw.URLs[p[1]] {
			t.Fatalf("%s = %q, %s = %q: want both, equal", p[0], raw.URLs[p[0]], p[1], raw.URLs[p[1]])
		}
	}
	// The small object: one byte, no compression.
	resp = get(t, c, gr.Urls.SmallUrl)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 1 || resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("small: %s, %d bytes, encoding %q", resp.Status, len(b), resp.Header.Get("Content-Encoding"))
	}
	if f.admitted.Load() != 0 {
		t.Fatalf("config and small object started %d tests", f.admitted.Load())
	}
}

// TestSelfProbesShareLoadConnection does what goresponsiveness does: its
// self probes go on the load connection over HTTP/2, and it fails if a
// probe needs a new connection.
func TestSelfProbesShareLoadConnection(t *testing.T) {
	f := newFixture(t, 5*time.Second, 0)
	c := f.client(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+LargePath, nil)
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("large object over %s", resp.Proto)
	}
	var loadBytes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, _ := io.Copy(io.Discard, resp.Body)
		loadBytes.Store(n)
	}()
	for i := range 5 {
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
		preq, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, f.srv.URL+SmallPath, nil)
		preq.Header.Set("Accept-Encoding", "identity")
		presp, err := c.Do(preq)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(presp.Body)
		presp.Body.Close()
		if !reused || len(b) != 1 {
			t.Fatalf("self probe %d: reused %v, %d bytes", i, reused, len(b))
		}
	}
	cancel()
	<-done
	if n := f.conns.Load(); n != 1 {
		t.Fatalf("server saw %d connections, want 1 (load and self probes multiplexed)", n)
	}
	if n := f.admitted.Load(); n != 1 {
		t.Fatalf("%d tests admitted, want 1", n)
	}
}

// TestUploadAnsweredAfterBody: the upload sink replies 200 only after it
// read the whole body, over HTTP/2 and HTTP/1.1.
func TestUploadAnsweredAfterBody(t *testing.T) {
	f := newFixture(t, 5*time.Second, 0)
	for _, h2 := range []bool{true, false} {
		c := f.client(h2)
		const size = 4 << 20
		pr, pw := io.Pipe()
		var wrote atomic.Int64
		go func() {
			chunk := bytes.Repeat([]byte{1}, 64<<10)
			for wrote.Load() < size {
				n, err := pw.Write(chunk)
				wrote.Add(int64(n))
				if err != nil {
					return
				}
			}
			pw.Close()
		}()
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+UploadPath, pr)
		req.Header.Set("Accept-Encoding", "identity")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("upload (h2 %v): %s", h2, resp.Status)
		}
		if w := wrote.Load(); w < size {
			t.Fatalf("upload (h2 %v) answered after %d of %d bytes", h2, w, size)
		}
	}
}

// TestRefusalIs429WithRetryAfter: a full server answers 429 with a
// Retry-After, as the draft's clients expect (§7).
func TestRefusalIs429WithRetryAfter(t *testing.T) {
	f := newFixture(t, 5*time.Second, 0)
	f.refuse.Store(true)
	c := f.client(true)
	for _, p := range []string{LargePath, UploadPath} {
		method := http.MethodGet
		if p == UploadPath {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, f.srv.URL+p, strings.NewReader("x"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s refused: %s, Retry-After %q", p, resp.Status, resp.Header.Get("Retry-After"))
		}
	}
}

// TestLimitsHold: a test's flows together move no more than its byte
// limit, stop at its deadline, and give back their test when they end.
func TestLimitsHold(t *testing.T) {
	const limit = 3 << 20
	f := newFixture(t, 700*time.Millisecond, limit)
	c := f.client(true)
	start := time.Now()
	var wg sync.WaitGroup
	var got atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := get(t, c, f.srv.URL+LargePath)
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			got.Add(n)
		}()
	}
	wg.Wait()
	if g := got.Load(); g > limit || g == 0 {
		t.Fatalf("4 flows read %d bytes, limit %d", g, limit)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("flows ended after %v", el)
	}
	// The upload beyond what is left is refused, not answered 200.
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+UploadPath, bytes.NewReader(make([]byte, 1<<20)))
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatalf("upload past the byte limit answered 200")
		}
	}
	// A slow reader cannot hold the test past its deadline.
	f2 := newFixture(t, 500*time.Millisecond, 0)
	resp = get(t, f2.client(true), f2.srv.URL+LargePath)
	defer resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for f2.load.Active() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("a client that stopped reading still holds its test 5 s after a 0.5 s limit")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
