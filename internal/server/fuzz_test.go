package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// Fuzz targets for every endpoint that takes client input, driving the
// real handler without sockets. Each asserts: no panic, 200 or a 4xx, and
// a bounded allocation per call (runtime.MemStats.TotalAlloc; the fuzz
// worker runs one input at a time, so little else allocates meanwhile).

// fuzzAllocBound is what one call may allocate beyond a multiple of its
// input: a few MB.
const fuzzAllocBound = 4 << 20

func fuzzServer(f *testing.F, cfg Config) *Server {
	f.Helper()
	cfg.PerIPPerMinute = -1
	// A session's slot comes back asynchronously after its DELETE; the
	// next input must not meet the default cap of 8 meanwhile. Streams are
	// few so that the slots' worst case still fits the descriptor limit
	// that New checks.
	cfg.MaxConcurrent = 1000
	if cfg.MaxStreams == 0 {
		cfg.MaxStreams = 8
	}
	if cfg.UDPAddr == "" {
		cfg.UDPAddr = "off"
	}
	s, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Close)
	return s
}

// serve runs one request through the server's handler and returns the
// reply and the bytes allocated meanwhile.
func serve(s *Server, req *http.Request) (*httptest.ResponseRecorder, uint64) {
	// The request arrived on loopback, as the WebRTC handler needs to know.
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}))
	rec := httptest.NewRecorder()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	s.Handler().ServeHTTP(rec, req)
	runtime.ReadMemStats(&m1)
	return rec, m1.TotalAlloc - m0.TotalAlloc
}

func checkReply(t *testing.T, what string, rec *httptest.ResponseRecorder, alloc uint64, input int) {
	t.Helper()
	if c := rec.Code; c != http.StatusOK && c != http.StatusNoContent && (c < 400 || c > 499) {
		t.Fatalf("%s: status %d: %.200s", what, c, rec.Body)
	}
	if alloc > fuzzAllocBound+64*uint64(input) {
		t.Fatalf("%s: %d bytes of input allocated %d bytes", what, input, alloc)
	}
	if rec.Code >= 400 && (rec.Body.Len() > 4096 || strings.Count(strings.TrimSpace(rec.Body.String()), "\n") > 0) {
		t.Fatalf("%s: error reply not one short line: %.200q", what, rec.Body)
	}
}

// newSession opens a test session through the handler; the caller ends it.
func newSession(t testing.TB, s *Server) string {
	t.Helper()
	rec, _ := serve(s, httptest.NewRequest(http.MethodPost, protocol.PathSessions, strings.NewReader(`{"client":"fuzz"}`)))
	var rep protocol.SessionReply
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("session: %d %s", rec.Code, rec.Body)
	}
	return rep.ID
}

func endSession(s *Server, id string) {
	serve(s, httptest.NewRequest(http.MethodDelete, protocol.PathSessions+"/"+id, nil))
}

func FuzzSessionCreate(f *testing.F) {
	for _, seed := range []string{`{"client":"sonde"}`, `{"tcpinfo_interval_ms":1e308}`, `{"tcpinfo_interval_ms":-5}`, `{`, `[]`, `null`, ``} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f, Config{})
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, alloc := serve(s, httptest.NewRequest(http.MethodPost, protocol.PathSessions, bytes.NewReader(body)))
		checkReply(t, "create", rec, alloc, len(body))
		var rep protocol.SessionReply
		if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &rep) == nil {
			endSession(s, rep.ID) // give the slot back
		}
	})
}

// FuzzBrowserResult: the page's result endpoint. Beyond the allocation,
// the reply and the stored row are bounded: by the session's span (a
// direction's throughput at 0.1 s steps) plus a multiple of the input.
func FuzzBrowserResult(f *testing.F) {
	for _, seed := range []string{
		`{"software":"sonde-web","duration_s":10,"baseline":{"samples":[{"t_s":0.1,"rtt_ms":5,"server_ms":0.01}],"lost":0}}`,
		`{"download":{"start_s":0,"end_s":1,"tags":["d0"],"counts":{"d0":[{"t_s":0,"bytes":0},{"t_s":1e9,"bytes":1000000}]}}}`,
		`{"download":{"start_s":0,"end_s":1,"tags":["d0"],"counts":{"d0":[{"t_s":0,"bytes":0},{"t_s":1e5,"bytes":1000000}]}}}`,
		`{"upload":{"start_s":1,"end_s":140,"tags":["u0","u1"],"self_ms":[1,2,3],"foreign":{"tcp_ms":[1],"http_ms":[2],"failed":1}}}`,
		`{"download":{"start_s":0,"end_s":149,"tags":["a","b"],"counts":{"a":[{"t_s":0,"bytes":0},{"t_s":149,"bytes":9e15}]},"latency":{"samples":[{"t_s":3,"rtt_ms":-0.5}]}}}`,
		`{"errors":["x"],"notes":["y"],"offset_s":0.002}`, `{`, `null`,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f, Config{})
	f.Fuzz(func(t *testing.T, body []byte) {
		id := newSession(t, s)
		defer endSession(s, id)
		rec, alloc := serve(s, httptest.NewRequest(http.MethodPost, protocol.PathSessions+"/"+id+"/result", bytes.NewReader(body)))
		checkReply(t, "result", rec, alloc, len(body))
		bound := 256<<10 + 8*len(body)
		if rec.Body.Len() > bound {
			t.Fatalf("%d bytes of input gave a %d-byte reply", len(body), rec.Body.Len())
		}
		if raw, err := s.history.GetResult(context.Background(), id); err == nil && len(raw) > bound {
			t.Fatalf("%d bytes of input stored a %d-byte row", len(body), len(raw))
		} else if err == nil && rec.Code != http.StatusOK {
			t.Fatalf("a refused result (%d) was stored", rec.Code)
		}
	})
}

// countingBody is a body of n bytes that counts how many were read.
type countingBody struct{ n, read int }

func (b *countingBody) Read(p []byte) (int, error) {
	if b.read >= b.n {
		return 0, io.EOF
	}
	k := min(len(p), b.n-b.read)
	clear(p[:k])
	b.read += k
	return k, nil
}

// FuzzWebRTCRecords: a session without a WebRTC test refuses records
// before reading the body, whatever the query (rtcquality fuzzes the
// records themselves, FuzzRecords).
func FuzzWebRTCRecords(f *testing.F) {
	f.Add("datagrams=5", 80<<20)
	f.Add("datagrams=-1", 20)
	f.Add("", 0)
	s := fuzzServer(f, Config{})
	id := newSession(f, s)
	f.Fuzz(func(t *testing.T, query string, n int) {
		body := &countingBody{n: min(max(n, 0), 80<<20)}
		req := httptest.NewRequest(http.MethodPost, protocol.PathSessions+"/"+id+"/webrtc/records", body)
		req.URL.RawQuery = query
		rec, alloc := serve(s, req)
		checkReply(t, "records", rec, alloc, len(query))
		if rec.Code != http.StatusNotFound || body.read != 0 {
			t.Fatalf("records without a test: %d, %d of %d body bytes read", rec.Code, body.read, body.n)
		}
	})
}

// FuzzWebRTCOffer: the signalling endpoint; each input gets a fresh
// session (one peer connection per session).
func FuzzWebRTCOffer(f *testing.F) {
	for _, seed := range []string{`{"type":"offer","sdp":"v=0\r\n"}`, `{"type":"answer","sdp":"x"}`, `{"type":"offer"}`, `{`, ``} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f, Config{})
	f.Fuzz(func(t *testing.T, body []byte) {
		id := newSession(t, s)
		defer endSession(s, id)
		rec, alloc := serve(s, httptest.NewRequest(http.MethodPost, protocol.PathSessions+"/"+id+"/webrtc", bytes.NewReader(body)))
		checkReply(t, "offer", rec, alloc, len(body))
	})
}

// FuzzUDPSessionCreate: the STAMP session endpoint, with a reflector on a
// loopback port; every session opened is closed again.
func FuzzUDPSessionCreate(f *testing.F) {
	for _, seed := range []string{
		`{"duration_s":1,"interval_us":1000,"packet_bytes":64}`,
		`{"duration_s":1e300,"interval_us":1000,"packet_bytes":64}`,
		`{"duration_s":1,"interval_us":1e300,"packet_bytes":64}`,
		`{"duration_s":1,"interval_us":100,"packet_bytes":9000}`,
		`{"duration_s":1,"interval_us":1000,"packet_bytes":64,"test_session":"nope"}`,
		`{"duration_s":86400,"interval_us":100000,"packet_bytes":44,"monitor":true}`,
		`{"duration_s":86401,"interval_us":100000,"packet_bytes":44,"monitor":true}`,
		`{"duration_s":60,"interval_us":5000,"packet_bytes":201,"monitor":true,"test_session":"x"}`,
		`{"duration_s":-1}`, `{`, ``,
	} {
		f.Add([]byte(seed))
	}
	s := fuzzServer(f, Config{UDPAddr: "127.0.0.1:0"})
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, alloc := serve(s, httptest.NewRequest(http.MethodPost, stamp.PathSessions, bytes.NewReader(body)))
		checkReply(t, "udp session", rec, alloc, len(body))
		var rep stamp.SessionReply
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil || rep.MaxPackets < 0 || !(rep.ExpiresS > 0) {
				t.Fatalf("reply %s: %v", rec.Body, err)
			}
			serve(s, httptest.NewRequest(http.MethodDelete, stamp.PathSessions+"/"+rep.ID, nil))
		}
	})
}

// FuzzResults: the past-results list and lookup (query and path).
func FuzzResults(f *testing.F) {
	f.Add("limit=5", "0123456789abcdef0123456789abcdef")
	f.Add("limit=99999999999999999999", "xyz")
	f.Add("", "%zz")
	f.Add("kind=tcp&limit=3", "0123456789abcdef0123456789abcdef")
	f.Add("kind=all", "")
	f.Add("kind=%00", "")
	s := fuzzServer(f, Config{})
	f.Fuzz(func(t *testing.T, query, id string) {
		req := httptest.NewRequest(http.MethodGet, PathResults, nil)
		req.URL.RawQuery = query
		rec, alloc := serve(s, req)
		checkReply(t, "list", rec, alloc, len(query))
		// As a client sends it: escaped on the wire.
		req = httptest.NewRequest(http.MethodGet, PathResults+"/"+url.PathEscape(id), nil)
		rec, alloc = serve(s, req)
		if rec.Code >= 300 && rec.Code < 400 {
			return // the mux redirects a path that is not clean ("/.")
		}
		if rec.Code == http.StatusOK {
			t.Fatalf("result %q found in an empty store", id)
		}
		checkReply(t, "get", rec, alloc, len(id))
		req = httptest.NewRequest(http.MethodGet, PathShared+url.PathEscape(id), nil)
		if rec, alloc = serve(s, req); rec.Code == http.StatusOK {
			t.Fatalf("shared result %q found in an empty store", id)
		} else if rec.Code < 300 || rec.Code >= 400 {
			checkReply(t, "shared", rec, alloc, len(id))
		}
	})
}
