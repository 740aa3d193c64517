package apiclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
)

func TestCallExplainsFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"abc"}`))
		case "/busy":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":"server busy: 1 of 1 test slots in use"}`))
		case "/html":
			_, _ = w.Write([]byte("<html>not json</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, "", "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var out struct{ ID string }
	if err := c.Call(ctx, http.MethodPost, "/ok", map[string]int{"a": 1}, &out); err != nil || out.ID != "abc" {
		t.Fatalf("ok: %v, %+v", err, out)
	}
	var re *RefusedError
	if err := c.Call(ctx, http.MethodGet, "/busy", nil, nil); !errors.As(err, &re) || re.Status != 429 || !strings.Contains(err.Error(), "1 of 1") {
		t.Fatalf("busy: %v", err)
	}
	var se *StatusError
	if err := c.Call(ctx, http.MethodGet, "/missing", nil, nil); !errors.As(err, &se) || se.Status != 404 {
		t.Fatalf("404: %v", err)
	}
	if err := c.Call(ctx, http.MethodGet, "/html", nil, &out); err == nil || !strings.Contains(err.Error(), "not a sonde server") {
		t.Fatalf("html: %v", err)
	}

	// A server that accepts and closes at once: net/http reports EOF or
	// "server closed idle connection" depending on timing; both must read
	// the same to the user. Repeat to meet both.
	closer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := closer.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	cl, _ := New(closer.Addr().String(), "", "test", nil)
	for i := 0; i < 20; i++ {
		if err := cl.Call(ctx, http.MethodGet, "/", nil, nil); err == nil || !strings.Contains(err.Error(), "closed the connection") {
			t.Fatalf("server that closes at once, try %d: %v", i, err)
		}
	}
	closer.Close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	gone, _ := New(addr, "", "test", nil)
	if err := gone.Call(ctx, http.MethodGet, "/", nil, nil); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("closed port: %v", err)
	}
}

// The ways a server that closes at once shows up all read the same.
func TestExplainDialClosed(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:9")
	for _, err := range []error{io.EOF, syscall.ECONNRESET, errors.New("http: server closed idle connection")} {
		if got := ExplainDial(u, err).Error(); !strings.Contains(got, "closed the connection") || !strings.Contains(got, "not a sonde server") {
			t.Errorf("%v → %q", err, got)
		}
	}
}
