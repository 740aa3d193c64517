package mbmsink

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/mbmwire"
)

// The fuzz targets check that every reply is a success or a client
// error in one short line, with a bounded allocation per call
// (runtime.MemStats.TotalAlloc; the fuzz worker runs one input at a time).

// fuzzAllocBound is what one call may allocate beyond a multiple of its
// input: a few MB.
const fuzzAllocBound = 4 << 20

// serve runs one request through h, from loopback, and returns the reply
// and the bytes allocated meanwhile.
func serve(h http.Handler, req *http.Request) (*httptest.ResponseRecorder, uint64) {
	req.RemoteAddr = "127.0.0.1:9"
	rec := httptest.NewRecorder()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	h.ServeHTTP(rec, req)
	runtime.ReadMemStats(&m1)
	return rec, m1.TotalAlloc - m0.TotalAlloc
}

func checkReply(t *testing.T, what string, rec *httptest.ResponseRecorder, alloc uint64, input int) {
	t.Helper()
	if c := rec.Code; c != http.StatusOK && (c < 400 || c > 499) {
		t.Fatalf("%s: status %d: %.200s", what, c, rec.Body)
	}
	if alloc > fuzzAllocBound+64*uint64(input) {
		t.Fatalf("%s: %d bytes of input allocated %d bytes", what, input, alloc)
	}
	if rec.Code >= 400 && (rec.Body.Len() > 4096 || strings.Count(strings.TrimSpace(rec.Body.String()), "\n") > 0) {
		t.Fatalf("%s: error reply not one short line: %.200q", what, rec.Body)
	}
}

func FuzzMBMOpen(f *testing.F) {
	b, _ := json.Marshal(mbmRequest(1000))
	f.Add(b)
	f.Add([]byte(`{"rate_bps":1e300,"packets":-1}`))
	f.Add([]byte(`{`))
	tcp, _ := json.Marshal(tcpRequest())
	f.Add(tcp)
	f.Add([]byte(`{"transport":"tcp","rate_bps":1e7,"duration_s":5,"receive_window_bytes":2048,"receive_buffer_bytes":4194304}`))
	f.Add([]byte(`{"transport":"tcp","rate_bps":1e7,"duration_s":1e9,"receive_window_bytes":-5}`))
	_, _, s := newTestSink(f, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		rec, alloc := serve(s, httptest.NewRequest(http.MethodPost, mbmwire.PathSessions, bytes.NewReader(body)))
		checkReply(t, "mbm open", rec, alloc, len(body))
		var rep mbmwire.SessionReply
		if rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &rep) == nil {
			rec, _ := serve(s, httptest.NewRequest(http.MethodPost, mbmwire.PathSessions+"/"+rep.ID+"/end", strings.NewReader(`{"sent":0}`)))
			if rec.Code != http.StatusOK {
				t.Fatalf("end: %d %s", rec.Code, rec.Body)
			}
		}
	})
}

func FuzzMBMEnd(f *testing.F) {
	f.Add([]byte(`{"sent":10,"from":2,"verdict":"PASS"}`), false)
	f.Add([]byte(`{"sent":1e20}`), false)
	f.Add([]byte(`{"sent":5,"from":9}`), false)
	f.Add([]byte(`{"verdict":"MAYBE"}`), false)
	f.Add([]byte(`{"sent":0,"verdict":"PASS"}`), true)
	f.Add([]byte(`{"sent":3}`), true)
	k, _, s := newTestSink(f, Options{})
	open, _ := json.Marshal(mbmRequest(1000))
	openTCP, _ := json.Marshal(tcpRequest())
	f.Fuzz(func(t *testing.T, body []byte, tcp bool) {
		req := open
		if tcp {
			req = openTCP
		}
		rec, _ := serve(s, httptest.NewRequest(http.MethodPost, mbmwire.PathSessions, bytes.NewReader(req)))
		var rep mbmwire.SessionReply
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &rep) != nil {
			t.Fatalf("open: %d %s", rec.Code, rec.Body)
		}
		rec, alloc := serve(s, httptest.NewRequest(http.MethodPost, mbmwire.PathSessions+"/"+rep.ID+"/end", bytes.NewReader(body)))
		checkReply(t, "mbm end", rec, alloc, len(body))
		if rec.Code != http.StatusOK {
			k.expire(rep.ID) // a refused end leaves the session open
		}
	})
}
