package apiclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

// checkPlain fails on a message that shows a Go formatting verb or one of
// net/http's internal names.
func checkPlain(t *testing.T, err error) {
	t.Helper()
	for _, bad := range []string{"%!", "readLoopPeekFailLocked", "persistConn", "(<nil>)"} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("message shows %q: %v", bad, err)
		}
	}
}

// A plain-text or empty refusal is a refusal; a page is not a reason.
func TestPlainRefusal(t *testing.T) {
	srv := servertestless(t)
	c, _ := New(srv, "", "test", nil)
	defer c.Close()
	for path, want := range map[string]string{
		"/plain": "server busy: try later",
		"/empty": `answered "429 Too Many Requests"`,
		"/page":  `answered "503 Service Unavailable"`,
	} {
		err := c.Call(context.Background(), http.MethodGet, path, nil, nil)
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "<") {
			t.Errorf("%s: %v, want a refusal saying %q", path, err, want)
		}
	}
}

func servertestless(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/plain":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("server busy: try later\x07\r\nsecond line\r\n"))
		case "/empty":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("<html><body>down</body></html>"))
		}
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// net/http's error for an answer that came before the request reads as
// one plain line.
func TestExplainDialInternal(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:9")
	err := ExplainDial(u, errors.New("readLoopPeekFailLocked: %!w(<nil>)"))
	checkPlain(t, err)
	if !strings.Contains(err.Error(), "closed the connection before answering") {
		t.Errorf("got %v", err)
	}
}

// A server that answers as soon as it accepts, before the request is
// written (as a connection cap may), is read as answering the request: its
// reason reaches the user, whichever comes first on the wire.
func TestAnswerBeforeRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 26\r\nConnection: close\r\n\r\nserver busy: try it later\n"))
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				_, _ = c.Read(make([]byte, 4096))
			}()
		}
	}()
	for i := range 50 {
		c, err := New(ln.Addr().String(), "", "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Call(context.Background(), http.MethodPost, protocol.PathSessions, protocol.SessionRequest{Client: "test"}, nil)
		c.Close()
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "server busy: try it later") {
			t.Fatalf("try %d: %v, want the refusal with its reason", i, err)
		}
	}
}
