package librespeed

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/stream"
)

// FuzzEndpoints sends any method, path with query, Host, Origin and body to
// the backend: nothing panics, no reply moves more than the test's byte
// limit, and getIP and the server list stay valid JSON.
func FuzzEndpoints(f *testing.F) {
	payload, err := stream.NewPayload()
	if err != nil {
		f.Fatal(err)
	}
	const limit = 256 << 10
	f.Add("GET", "/backend/garbage.php?cors=true&r=0.1&ckSize=100", "h", "", []byte(nil))
	f.Add("POST", "/empty?r=1", "h", "https://o", bytes.Repeat([]byte("x"), 4096))
	f.Add("OPTIONS", "/getIP.php", "h", "https://o", []byte(nil))
	f.Add("GET", WellKnownPath, "[::1]:8080", "", []byte(nil))
	f.Add("GET", "/garbage?ckSize=-1", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, method, target, host, origin string, body []byte) {
		load, err := httpload.New(httpload.Options{MaxTime: 2 * time.Second, MaxBytes: limit, Idle: time.Millisecond,
			Admit: func(*http.Request) (func(), error) { return func() {}, nil }}, payload)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := NewHandler(load, "fuzz")
		mux := http.NewServeMux()
		h.Register(mux)
		req, err := http.NewRequest(method, "http://x"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Host = host
		req.RemoteAddr = "198.18.0.1:1234"
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Body.Len() > limit+1024 {
			t.Fatalf("%s %s: %d bytes, limit %d", method, target, rec.Body.Len(), limit)
		}
		if rec.Code == 200 && method == "GET" && rec.Header().Get("Content-Type") == "application/json" && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s: invalid JSON %q", target, rec.Body.String())
		}
	})
}

// FuzzChunks: any ckSize gives 0–1024 chunks.
func FuzzChunks(f *testing.F) {
	for _, s := range []string{"", "4", "-1", "1e3", "0x10", "99999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := Chunks(s); n < 0 || n > maxChunks {
			t.Fatalf("Chunks(%q) = %d", s, n)
		}
	})
}

// FuzzDescribe: any address string gives a label starting with itself or
// its canonical form, without a lookup.
func FuzzDescribe(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "::ffff:100.64.1.1", "fe80::1%eth0", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Describe(s) == "" && s != "" {
			t.Fatalf("Describe(%q) empty", s)
		}
	})
}

// FuzzServerList: any input parses or is refused in one line; what parses
// holds only entries with a name and a server origin.
func FuzzServerList(f *testing.F) {
	f.Add([]byte(`[{"id":1,"name":"a","server":"//198.18.0.2:8080/","dlURL":"garbage","extra":[1]}]`))
	f.Add([]byte(`[{"name":"b","server":"https://h.example/"}]`))
	f.Add([]byte(`[{"name":"c","server":"ftp://x/"}]`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		list, err := ParseServerList(b)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of two lines: %q", err)
			}
			return
		}
		for _, s := range list {
			if o, err := ServerOrigin(s.Server); err != nil || o == "" || s.Name == "" {
				t.Fatalf("kept %+v (%q, %v)", s, o, err)
			}
		}
	})
}
