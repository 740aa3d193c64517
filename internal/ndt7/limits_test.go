package ndt7

import (
	"crypto/rand"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// readAll reads a test's messages until the connection ends and returns
// the binary payload received and the error that ended reading.
func readAll(t *testing.T, c *websocket.Conn, within time.Duration) (binary int64, err error) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	for range 1 << 20 {
		typ, r, err := c.NextReader()
		if err != nil {
			return binary, err
		}
		n, err := io.Copy(io.Discard, r)
		if err != nil {
			return binary, err
		}
		if typ == websocket.BinaryMessage {
			binary += n
		}
	}
	return binary, nil
}

func TestDownloadByteLimit(t *testing.T) {
	const limit = 3<<20 + 12345
	srv, _, rec := testServer(t, Options{Duration: 5 * time.Second, MaxBytes: limit}, 0, false)
	start := time.Now()
	c := mustDial(t, srv, Download)
	defer c.Close()
	got, err := readAll(t, c, 10*time.Second)
	took := time.Since(start)
	if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
		t.Fatalf("download ended with %v, want a normal Close", err)
	}
	if ce := err.(*websocket.CloseError); ce.Text != byteLimitReason {
		t.Errorf("Close reason %q, want %q", ce.Text, byteLimitReason)
	}
	if got > limit || got < limit-InitialMessageSize {
		t.Errorf("client received %d bytes under a %d-byte limit", got, limit)
	}
	// Loopback moves 3 MB in milliseconds: the limit, not the 5 s, ended it.
	if took >= 5*time.Second {
		t.Errorf("download took %v: the byte limit did not end it", took)
	}
	if e := rec.waitEnded(t, 2*time.Second); e.err != nil || e.bytes != got {
		t.Errorf("observer: %+v, want %d bytes without error", e, got)
	}
}

func TestUploadByteLimit(t *testing.T) {
	const limit = 3<<20 + 12345
	srv, _, rec := testServer(t, Options{Duration: 5 * time.Second, MaxBytes: limit}, 0, false)
	start := time.Now()
	c := mustDial(t, srv, Upload)
	defer c.Close()
	payload := make([]byte, 64<<10)
	rand.Read(payload)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		for range 100000 {
			if err := c.WriteMessage(websocket.BinaryMessage, payload); err != nil {
				return
			}
		}
	}()
	_, err := readAll(t, c, 10*time.Second)
	wg.Wait()
	took := time.Since(start)
	if err == nil {
		t.Fatal("upload did not end")
	}
	e := rec.waitEnded(t, 2*time.Second)
	if e.err != nil || e.bytes != limit {
		t.Errorf("observer: %+v, want exactly %d bytes accepted, without error", e, limit)
	}
	if took >= 5*time.Second {
		t.Errorf("upload took %v: the byte limit did not end it", took)
	}
	t.Logf("upload ended after %v with %v", took.Round(time.Millisecond), err)
}

// A server limit shorter than Duration plus the grace bounds the whole
// test: load and grace shrink to fit.
func TestMaxTime(t *testing.T) {
	h, err := NewHandler(Options{MaxTime: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if h.duration != 4*time.Second || h.grace != time.Second {
		t.Errorf("max time 5 s: load %v grace %v, want 4 s and 1 s", h.duration, h.grace)
	}
	if h, _ := NewHandler(Options{MaxTime: time.Minute}); h.duration != DefaultDuration || h.grace != defaultGrace {
		t.Errorf("max time 1 min: load %v grace %v, want the defaults", h.duration, h.grace)
	}
	if _, err := NewHandler(Options{MaxTime: -time.Second}); err == nil {
		t.Error("negative max time accepted")
	}

	const limit = 1500 * time.Millisecond
	srv, _, rec := testServer(t, Options{MaxTime: limit}, 0, false)
	for _, kind := range []Kind{Download, Upload} {
		start := time.Now()
		c := mustDial(t, srv, kind)
		// Load ends before the limit, the hard end is at it.
		_, err := readAll(t, c, 10*time.Second)
		took := time.Since(start)
		c.Close()
		rec.waitEnded(t, 2*time.Second)
		if took > limit+500*time.Millisecond {
			t.Errorf("%s ran %v under a %v limit (ended by %v)", kind, took, limit, err)
		}
	}
}
