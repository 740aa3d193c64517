package ndt7

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// In these tests the server's Duration is long (5 s): each misbehaving
// client must end its test at once, and leave no goroutine behind.
const robustDuration = 5 * time.Second

func TestMalformedFrames(t *testing.T) {
	srv, _, rec := testServer(t, Options{Duration: robustDuration}, 0, false)
	baseline := runtime.NumGoroutine()

	both := []Kind{Download, Upload}
	big := make([]byte, MaxMessageSize)
	for _, tc := range []struct {
		name  string
		kinds []Kind
		data  []byte
	}{
		{"unmasked frame", both, frame(bitFin|opBinary, false, 3, []byte("abc"))},
		{"reserved opcode", both, frame(bitFin|0x3, true, 3, []byte("abc"))},
		{"RSV1 without extension", both, frame(bitFin|bitRSV1|opText, true, 2, []byte("{}"))},
		{"control frame over 125 bytes", both, frame(bitFin|opPing, true, 126, make([]byte, 126))},
		{"fragmented control frame", both, frame(opPing, true, 1, []byte("x"))},
		{"continuation without start", both, frame(bitFin|opContinuation, true, 1, []byte("x"))},
		{"invalid close code", both, frame(bitFin|opClose, true, 2, []byte{0x03, 0xe7})},
		{"frame length beyond read limit", both, frame(bitFin|opBinary, true, 1<<40, nil)},
		{"message beyond read limit", []Kind{Upload}, slices.Concat(
			frame(opBinary, true, MaxMessageSize, big),
			frame(bitFin|opContinuation, true, 1, []byte("x")))},
		{"binary message during download", []Kind{Download}, frame(bitFin|opBinary, true, 3, []byte("abc"))},
	} {
		for _, kind := range tc.kinds {
			t.Run(tc.name+"/"+string(kind), func(t *testing.T) {
				c := mustDial(t, srv, kind)
				defer c.Close()
				start := time.Now()
				raw := c.NetConn()
				raw.SetDeadline(time.Now().Add(robustDuration))
				if _, err := raw.Write(tc.data); err != nil {
					t.Fatalf("writing frame: %v", err)
				}
				// Keep reading, so a download's sender never blocks: the
				// server must drop the connection by itself.
				if _, err := io.Copy(io.Discard, raw); errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("server kept the connection open")
				}
				e := rec.waitEnded(t, 2*time.Second)
				if took := time.Since(start); took > time.Second {
					t.Errorf("test ended after %v", took)
				}
				if e.err == nil || e.kind != kind {
					t.Errorf("observer: %+v, want a failed %s", e, kind)
				}
				t.Logf("server: %v", e.err)
			})
		}
	}
	settleGoroutines(t, baseline, 3*time.Second)
}

func TestAbruptDisconnect(t *testing.T) {
	srv, _, rec := testServer(t, Options{Duration: robustDuration}, 0, false)
	baseline := runtime.NumGoroutine()

	reset := func(c *websocket.Conn) {
		c.NetConn().(*net.TCPConn).SetLinger(0)
		c.NetConn().Close()
	}
	for _, tc := range []struct {
		name string
		kind Kind
		act  func(t *testing.T, c *websocket.Conn)
	}{
		{"download, RST after some messages", Download, func(t *testing.T, c *websocket.Conn) {
			for range 5 {
				if _, _, err := c.ReadMessage(); err != nil {
					t.Fatalf("reading: %v", err)
				}
			}
			reset(c)
		}},
		{"download, FIN without reading", Download, func(t *testing.T, c *websocket.Conn) {
			c.NetConn().Close()
		}},
		{"upload, cut inside a frame", Upload, func(t *testing.T, c *websocket.Conn) {
			for range 5 {
				if err := c.WriteMessage(websocket.BinaryMessage, make([]byte, InitialMessageSize)); err != nil {
					t.Fatalf("writing: %v", err)
				}
			}
			c.NetConn().Write(frame(bitFin|opBinary, true, 1000, make([]byte, 10))[:16])
			c.NetConn().Close()
		}},
		{"upload, RST", Upload, func(t *testing.T, c *websocket.Conn) {
			if err := c.WriteMessage(websocket.BinaryMessage, make([]byte, InitialMessageSize)); err != nil {
				t.Fatalf("writing: %v", err)
			}
			reset(c)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mustDial(t, srv, tc.kind)
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(robustDuration))
			c.SetWriteDeadline(time.Now().Add(robustDuration))
			start := time.Now()
			tc.act(t, c)
			e := rec.waitEnded(t, 2*time.Second)
			if took := time.Since(start); took > time.Second {
				t.Errorf("test ended after %v", took)
			}
			if e.err == nil {
				t.Errorf("observer: %+v, want an error", e)
			}
			t.Logf("server: %v", e.err)
		})
	}
	settleGoroutines(t, baseline, 3*time.Second)
}

// A client that closes normally before the end has not failed.
func TestClientClosesEarly(t *testing.T) {
	srv, _, rec := testServer(t, Options{Duration: robustDuration}, 0, false)
	baseline := runtime.NumGoroutine()
	c := mustDial(t, srv, Download)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(robustDuration))
	for range 5 {
		if _, _, err := c.ReadMessage(); err != nil {
			t.Fatalf("reading: %v", err)
		}
	}
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if err := c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var err error
	for range 1 << 20 {
		if _, _, err = c.NextReader(); err != nil {
			break
		}
	}
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Errorf("client read ended with %v, want the server's Close", err)
	}
	e := rec.waitEnded(t, 2*time.Second)
	if e.err != nil || e.bytes <= 0 {
		t.Errorf("observer: %+v, want bytes and no error", e)
	}
	c.Close()
	settleGoroutines(t, baseline, 3*time.Second)
}

// A client that neither reads nor writes cannot hold the server past
// Duration+grace.
func TestStalledClient(t *testing.T) {
	const (
		d     = 500 * time.Millisecond
		grace = time.Second
	)
	srv, _, rec := testServer(t, Options{Duration: d}, grace, false)
	baseline := runtime.NumGoroutine()
	for _, kind := range []Kind{Download, Upload} {
		t.Run(string(kind), func(t *testing.T) {
			start := time.Now()
			c := mustDial(t, srv, kind)
			defer c.Close()
			e := rec.waitEnded(t, d+grace+2*time.Second)
			took := time.Since(start)
			if took < d+grace-100*time.Millisecond || took > d+grace+time.Second {
				t.Errorf("test ended after %v, want about %v", took, d+grace)
			}
			switch kind {
			case Download:
				// The sender was stuck on a full socket until the hard
				// limit (the read deadline may fire first).
				if !errors.Is(e.err, ErrTimeLimit) {
					t.Errorf("download: %v, want a deadline error", e.err)
				}
			case Upload:
				// No load and no Close answer: tolerated, as the spec asks.
				if e.err != nil || e.bytes != 0 {
					t.Errorf("upload: %+v, want 0 bytes and no error", e)
				}
			}
			t.Logf("%s ended after %v: %v", kind, took.Round(time.Millisecond), e.err)
		})
	}
	settleGoroutines(t, baseline, 3*time.Second)
}
