package fleet

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

func TestHandler(t *testing.T) {
	st, _ := openStore(t, filepath.Join(t.TempDir(), "fleet.db"))
	writeFleet(t, st)
	assets := fstest.MapFS{"fleet.html": {Data: []byte("<p>fleet</p>")}, "fleet.js": {Data: []byte("1")}, "monitor.css": {Data: []byte("p{}")}}
	now := func() time.Time { return time.Unix(0, t0+hours*3600e9) }
	srv := httptest.NewServer(Handler(st, assets, now))
	defer srv.Close()
	get := func(path string) (*http.Response, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(io.LimitReader(res.Body, 1<<24))
		if err != nil {
			t.Fatal(err)
		}
		return res, string(b)
	}
	res, body := get("/")
	if res.StatusCode != 200 || body != "<p>fleet</p>" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("/: %d %q", res.StatusCode, body)
	}
	res, body = get("/fleet.json?since=3h&label=isp%3Dacme")
	var rep model.FleetReport
	if res.StatusCode != 200 || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Monitors) != 3 || len(rep.Upstream) != 1 {
		t.Fatalf("/fleet.json: %d, %d monitors: %.200s", res.StatusCode, len(rep.Monitors), body)
	}
	for _, q := range []string{"since=0d", "since=7w", "label=isp", "x=1", "since=1d&since=2d", "since=401d"} {
		if res, body := get("/fleet.json?" + q); res.StatusCode != 400 || strings.Count(strings.TrimSpace(body), "\n") != 0 {
			t.Errorf("?%s: %d %q, want 400 and one line", q, res.StatusCode, body)
		}
	}
	// A monitor's own report: the HTML of monitor report, no script.
	name := rep.Monitors[0].Name
	res, body = get("/report?since=3h&monitor=" + url.QueryEscape(name))
	if res.StatusCode != 200 || !strings.Contains(body, name) || strings.Contains(body, "<script") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("/report of %q: %d %q, script %v, named %v", name, res.StatusCode, res.Header.Get("Content-Security-Policy"), strings.Contains(body, "<script"), strings.Contains(body, name))
	}
	if res, body := get("/report?monitor=nosuch"); res.StatusCode != 404 || strings.Count(strings.TrimSpace(body), "\n") != 0 {
		t.Errorf("/report of no monitor: %d %q", res.StatusCode, body)
	}
	for _, q := range []string{"", "since=7d", "monitor=a&monitor=b", "monitor=a&x=1", "monitor=a&since=0d"} {
		if res, body := get("/report?" + q); res.StatusCode != 400 || strings.Count(strings.TrimSpace(body), "\n") != 0 {
			t.Errorf("/report?%s: %d %q, want 400 and one line", q, res.StatusCode, body)
		}
	}
	if res, _ := get("/nothing"); res.StatusCode != 404 {
		t.Errorf("/nothing: %d", res.StatusCode)
	}
}

func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"since=7d", "since=36h&label=isp%3Dacme&label=region%3Dn", "since=0d", "label=%zz", "since=99999999d", ""} {
		f.Add(s)
	}
	now := time.Unix(1_767_225_600, 0)
	f.Fuzz(func(t *testing.T, q string) {
		req, err := ParseQuery(q, now)
		if err != nil {
			return
		}
		if req.ToNs != now.UnixNano() || req.FromNs >= req.ToNs || req.ToNs-req.FromNs > MaxViewRangeNs {
			t.Fatalf("%q: range [%d, %d)", q, req.FromNs, req.ToNs)
		}
		if err := req.Check(); err != nil {
			t.Fatalf("%q parsed to a request Report refuses: %v", q, err)
		}
	})
}

func FuzzParseReportQuery(f *testing.F) {
	for _, s := range []string{"monitor=home&since=7d", "monitor=a%20b", "monitor=", "since=36h&monitor=x", "monitor=%zz"} {
		f.Add(s)
	}
	now := time.Unix(1_767_225_600, 0)
	f.Fuzz(func(t *testing.T, q string) {
		name, from, to, err := ParseReportQuery(q, now)
		if err != nil {
			return
		}
		if name == "" || len(name) > 256 || to != now.UnixNano() || from >= to || to-from > MaxViewRangeNs {
			t.Fatalf("%q: %q [%d, %d)", q, name, from, to)
		}
	})
}
