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
		h, _ := NewHandler(load)
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

// FuzzParseConfig: any configuration document is accepted only with
// version 1 and three http(s) URLs, and never panics.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"version":1,"urls":{"small_https_download_url":"https://a/s","large_https_download_url":"https://a/l","https_upload_url":"https://a/u"}}`))
	f.Add([]byte(`{"version":"1","urls":{"small_download_url":"http://a/s","large_download_url":"http://a/l","upload_url":"http://a/u"}}`))
	f.Add([]byte(`{"version":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, l, u, err := ParseConfig(b)
		if err == nil && (s == "" || l == "" || u == "") {
			t.Fatalf("accepted %q with an empty URL", b)
		}
	})
}

// FuzzConfigURL: any typed URL gives an http(s) URL with a path, or an error.
func FuzzConfigURL(f *testing.F) {
	for _, s := range []string{"host", "https://h:8080", "http://h/x", "ftp://h", "://", "h:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ConfigURL(s)
		if err == nil && (u.Host == "" || u.Path == "" || (u.Scheme != "https" && u.Scheme != "http")) {
			t.Fatalf("ConfigURL(%q) = %v", s, u)
		}
	})
}
