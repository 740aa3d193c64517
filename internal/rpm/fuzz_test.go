package rpm

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/stream"
)

// FuzzEndpoints sends any method, path, Host and body to the endpoints:
// nothing panics, the config is valid JSON naming the Host it was asked
// for, and no reply moves more than the test's byte limit.
func FuzzEndpoints(f *testing.F) {
	payload, err := stream.NewPayload()
	if err != nil {
		f.Fatal(err)
	}
	const limit = 256 << 10
	f.Add("GET", ConfigPath, "example.test", []byte(nil))
	f.Add("GET", LargePath, "[::1]:443", []byte(nil))
	f.Add("POST", UploadPath, "h", bytes.Repeat([]byte("x"), 1000))
	f.Add("PUT", UploadPath, "h:1", make([]byte, limit+1))
	f.Add("GET", SmallPath, "%zz", []byte(nil))
	f.Fuzz(func(t *testing.T, method, path, host string, body []byte) {
		load, err := httpload.New(httpload.Options{MaxTime: 2 * time.Second, MaxBytes: limit,
			Idle:  time.Millisecond,
			Admit: func(*http.Request) (func(), error) { return func() {}, nil }}, payload)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := NewHandler(load, nil)
		mux := http.NewServeMux()
		h.Register(mux)
		req, err := http.NewRequest(method, "http://x"+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Host = host
		req.RemoteAddr = "198.18.0.1:1234"
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Body.Len() > limit+1024 {
			t.Fatalf("%s %s: %d bytes, limit %d", method, path, rec.Body.Len(), limit)
		}
		if rec.Header().Get("Content-Encoding") != "" {
			t.Fatal("Content-Encoding set")
		}
		if req.URL.Path == ConfigPath && method == "GET" && rec.Code == 200 {
			var c Config
			if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil || c.Version != 1 || c.URLs.HTTPSUpload == "" {
				t.Fatalf("config %q: %v", rec.Body.String(), err)
			}
		}
	})
}
