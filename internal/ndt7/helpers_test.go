package ndt7

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// ended is one Observer.TestEnded call.
type ended struct {
	kind  Kind
	bytes int64
	err   error
}

// recorder is an Observer that keeps everything it is told.
type recorder struct {
	mu       sync.Mutex
	started  []Kind
	rejected []int
	logs     []string
	ends     chan ended
}

func newRecorder() *recorder { return &recorder{ends: make(chan ended, 64)} }

func (r *recorder) TestStarted(k Kind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, k)
}

func (r *recorder) TestEnded(k Kind, n int64, err error) { r.ends <- ended{k, n, err} }

func (r *recorder) Rejected(k Kind, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = append(r.rejected, status)
}

func (r *recorder) logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
}

func (r *recorder) snapshot() (started []Kind, rejected []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Kind(nil), r.started...), append([]int(nil), r.rejected...)
}

// waitEnded returns the next finished test, failing after within.
func (r *recorder) waitEnded(t *testing.T, within time.Duration) ended {
	t.Helper()
	select {
	case e := <-r.ends:
		return e
	case <-time.After(within):
		t.Fatalf("no test ended within %v", within)
		return ended{}
	}
}

// testServer starts an httptest server (TLS if useTLS) running a Handler
// built from opts with the given grace; a zero grace keeps the default.
func testServer(t *testing.T, opts Options, grace time.Duration, useTLS bool) (*httptest.Server, *Handler, *recorder) {
	t.Helper()
	rec := newRecorder()
	opts.Observer = rec
	opts.Logf = rec.logf
	h, err := NewHandler(opts)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	if grace > 0 {
		h.grace = grace
	}
	mux := http.NewServeMux()
	h.Register(mux)
	var srv *httptest.Server
	if useTLS {
		srv = httptest.NewTLSServer(mux)
	} else {
		srv = httptest.NewServer(mux)
	}
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			rec.mu.Lock()
			for _, l := range rec.logs {
				t.Log("server: " + l)
			}
			rec.mu.Unlock()
		}
	})
	return srv, h, rec
}

func wsURL(srv *httptest.Server, kind Kind) string {
	path := DownloadPath
	if kind == Upload {
		path = UploadPath
	}
	return "ws" + strings.TrimPrefix(srv.URL, "http") + path
}

// dial opens an ndt7 WebSocket the way a client would (offering
// compression, which the server must not accept).
func dial(srv *httptest.Server, kind Kind, protocols ...string) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{
		Subprotocols:      protocols,
		HandshakeTimeout:  5 * time.Second,
		EnableCompression: true,
		WriteBufferSize:   1 << 20,
	}
	if srv.TLS != nil {
		d.TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	}
	return d.Dial(wsURL(srv, kind), nil)
}

func mustDial(t *testing.T, srv *httptest.Server, kind Kind) *websocket.Conn {
	t.Helper()
	c, _, err := dial(srv, kind, Subprotocol)
	if err != nil {
		t.Fatalf("dial %s: %v", kind, err)
	}
	return c
}

// settleGoroutines waits until the goroutine count is back to baseline.
func settleGoroutines(t *testing.T, baseline int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, baseline %d, after %v:\n%s", n, baseline, within, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Frame opcodes and bits (RFC 6455 §5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	bitFin         = 0x80
	bitRSV1        = 0x40
)

// frame encodes one client frame. length is the length written in the
// header, which may differ from len(payload) to build lying frames.
func frame(first byte, masked bool, length uint64, payload []byte) []byte {
	b := []byte{first, 0}
	switch {
	case length < 126:
		b[1] = byte(length)
	case length <= 0xffff:
		b[1] = 126
		b = binary.BigEndian.AppendUint16(b, uint16(length))
	default:
		b[1] = 127
		b = binary.BigEndian.AppendUint64(b, length)
	}
	if !masked {
		return append(b, payload...)
	}
	b[1] |= 0x80
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}
