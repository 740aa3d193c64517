package ndt7

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// serverMessage is a measurement as the client got it: parsed both into
// Measurement and into a generic map, so wire names are checked against
// the spec rather than against our own struct tags.
type serverMessage struct {
	m   Measurement
	raw map[string]any
}

func parseMessage(t *testing.T, data []byte) serverMessage {
	t.Helper()
	var sm serverMessage
	if err := json.Unmarshal(data, &sm.m); err != nil {
		t.Fatalf("measurement %q: %v", data, err)
	}
	if err := json.Unmarshal(data, &sm.raw); err != nil {
		t.Fatalf("measurement %q: %v", data, err)
	}
	return sm
}

// specTCPInfoFields are the TCPInfo names of spec v0.9.0 and later.
var specTCPInfoFields = []string{"BusyTime", "BytesAcked", "BytesReceived", "BytesSent",
	"BytesRetrans", "ElapsedTime", "MinRTT", "RTT", "RTTVar", "RWndLimited", "SndBufLimited"}

// checkMessages applies the checks common to both directions.
func checkMessages(t *testing.T, msgs []serverMessage, kind Kind, c *websocket.Conn, d time.Duration) {
	t.Helper()
	// Intervals are at most 625 ms, so a test of d has at least this many
	// periodic measurements, plus the first and the last.
	if min := int(d/maxInterval) + 2; len(msgs) < min {
		t.Fatalf("%d measurements, want at least %d", len(msgs), min)
	}
	for i, sm := range msgs {
		m := sm.m
		for _, k := range []string{"AppInfo", "Origin", "Test", "TCPInfo"} {
			if _, ok := sm.raw[k]; !ok {
				t.Fatalf("measurement %d lacks %q: %v", i, k, sm.raw)
			}
		}
		ti, _ := sm.raw["TCPInfo"].(map[string]any)
		for _, k := range specTCPInfoFields {
			if _, ok := ti[k]; !ok {
				t.Fatalf("measurement %d: TCPInfo lacks %q: %v", i, k, ti)
			}
		}
		if m.Origin != "server" || m.Test != string(kind) {
			t.Errorf("measurement %d: Origin %q Test %q", i, m.Origin, m.Test)
		}
		if (i == 0) != (m.ConnectionInfo != nil) {
			t.Errorf("measurement %d: ConnectionInfo %+v; want it in the first message only", i, m.ConnectionInfo)
		}
		if i > 0 {
			p := msgs[i-1].m
			if m.AppInfo.ElapsedTime < p.AppInfo.ElapsedTime || m.AppInfo.NumBytes < p.AppInfo.NumBytes {
				t.Errorf("measurement %d goes backwards: %+v after %+v", i, *m.AppInfo, *p.AppInfo)
			}
		}
		if m.TCPInfo.MinRTT <= 0 || m.TCPInfo.RTT <= 0 {
			t.Errorf("measurement %d: MinRTT %d RTT %d µs, want > 0", i, m.TCPInfo.MinRTT, m.TCPInfo.RTT)
		}
		if dt := m.TCPInfo.ElapsedTime - m.AppInfo.ElapsedTime; dt < 0 || dt > 1000 {
			t.Errorf("measurement %d: TCPInfo.ElapsedTime %d vs AppInfo.ElapsedTime %d",
				i, m.TCPInfo.ElapsedTime, m.AppInfo.ElapsedTime)
		}
	}
	ci := msgs[0].m.ConnectionInfo
	if ci.Client != c.LocalAddr().String() || ci.Server != c.RemoteAddr().String() || len(ci.UUID) != 36 {
		t.Errorf("ConnectionInfo %+v; client is %v, server %v", *ci, c.LocalAddr(), c.RemoteAddr())
	}
	last := msgs[len(msgs)-1].m
	if last.AppInfo.ElapsedTime < d.Microseconds() {
		t.Errorf("last measurement at %d µs, before the end (%v)", last.AppInfo.ElapsedTime, d)
	}
}

func TestDownload(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    bool
		d      time.Duration
		protos []string
	}{
		{"plain", false, 2 * time.Second, []string{Subprotocol}},
		// Several offered subprotocols: the server must pick ndt7's.
		{"tls", true, time.Second, []string{"x-other", Subprotocol}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, rec := testServer(t, Options{Duration: tc.d}, 0, tc.tls)
			start := time.Now()
			c, resp, err := dial(srv, Download, tc.protos...)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != Subprotocol {
				t.Errorf("selected subprotocol %q", p)
			}
			if e := resp.Header.Get("Sec-WebSocket-Extensions"); e != "" {
				t.Errorf("server negotiated extensions %q; compression must never be used", e)
			}
			c.SetReadDeadline(time.Now().Add(tc.d + 5*time.Second))

			var (
				msgs    []serverMessage
				binary  int64
				sizes   []int64
				readErr error
			)
			for range 1 << 20 {
				typ, r, err := c.NextReader()
				if err != nil {
					readErr = err
					break
				}
				data, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("reading message: %v", err)
				}
				if typ == websocket.BinaryMessage {
					binary += int64(len(data))
					sizes = append(sizes, int64(len(data)))
					continue
				}
				msgs = append(msgs, parseMessage(t, data))
			}
			took := time.Since(start)
			if !websocket.IsCloseError(readErr, websocket.CloseNormalClosure) {
				t.Errorf("download ended with %v, want a normal Close", readErr)
			}
			if took < tc.d || took > tc.d+defaultGrace {
				t.Errorf("download took %v, want %v to %v", took, tc.d, tc.d+defaultGrace)
			}
			checkMessages(t, msgs, Download, c, tc.d)
			last := msgs[len(msgs)-1].m
			if last.AppInfo.NumBytes != binary {
				t.Errorf("last NumBytes %d, client received %d payload bytes", last.AppInfo.NumBytes, binary)
			}
			if last.TCPInfo.BytesAcked <= 0 || last.TCPInfo.BytesSent < last.TCPInfo.BytesAcked {
				t.Errorf("TCPInfo BytesAcked %d BytesSent %d", last.TCPInfo.BytesAcked, last.TCPInfo.BytesSent)
			}
			checkSizes(t, sizes)

			e := rec.waitEnded(t, 2*time.Second)
			if e.kind != Download || e.err != nil || e.bytes != binary {
				t.Errorf("observer: %+v, want download of %d bytes without error", e, binary)
			}
			t.Logf("download %v: %d bytes, %.0f Mbit/s, %d measurements, MinRTT %d µs, largest message %d",
				tc.d, binary, float64(binary)*8/tc.d.Seconds()/1e6, len(msgs),
				last.TCPInfo.MinRTT, sizes[len(sizes)-1])
		})
	}
}

// checkSizes verifies the spec's message scaling: start at 1<<13, only
// powers of two, never shrinking, doubling once a message is at most 1/16
// of what was sent before it, capped at 1<<20.
func checkSizes(t *testing.T, sizes []int64) {
	t.Helper()
	if len(sizes) == 0 || sizes[0] != InitialMessageSize {
		t.Fatalf("first binary message sizes %v, want %d", sizes[:min(len(sizes), 3)], InitialMessageSize)
	}
	var total int64
	for i, s := range sizes {
		if i > 0 {
			prev := sizes[i-1]
			want := prev
			if prev < DefaultMaxScaledMessageSize && prev <= total/scalingFraction {
				want = 2 * prev
			}
			if s != want {
				t.Fatalf("message %d: %d bytes after %d (total %d); want %d", i, s, prev, total, want)
			}
		}
		total += s
	}
	if sizes[len(sizes)-1] == InitialMessageSize {
		t.Errorf("message size never grew in %d messages", len(sizes))
	}
}

func TestUpload(t *testing.T) {
	for _, tc := range []struct {
		name string
		tls  bool
		d    time.Duration
	}{
		{"plain", false, 2 * time.Second},
		{"tls", true, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _, rec := testServer(t, Options{Duration: tc.d}, 0, tc.tls)
			// The server's clock starts at the upgrade, inside the dial:
			// timing from after the dial read 1.9997 s for a 2 s upload.
			start := time.Now()
			c := mustDial(t, srv, Upload)
			defer c.Close()

			// The client's load, grown like ndt7 clients do; the writer
			// stops when the server's Close makes writes fail.
			var (
				completed int64 // bytes of messages fully written
				lastSize  int64
				wg        sync.WaitGroup
			)
			payload := make([]byte, 1<<20)
			rand.Read(payload)
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.SetWriteDeadline(time.Now().Add(tc.d + 5*time.Second))
				size := int64(InitialMessageSize)
				for range 1 << 20 {
					lastSize = size
					if err := c.WriteMessage(websocket.BinaryMessage, payload[:size]); err != nil {
						return
					}
					completed += size
					if size < int64(len(payload)) && size <= completed/scalingFraction {
						size *= 2
					}
				}
			}()

			c.SetReadDeadline(time.Now().Add(tc.d + 5*time.Second))
			var msgs []serverMessage
			var readErr error
			for range 1 << 20 {
				typ, data, err := c.ReadMessage()
				if err != nil {
					readErr = err
					break
				}
				if typ != websocket.TextMessage {
					t.Fatalf("server sent a message of type %d during an upload", typ)
				}
				msgs = append(msgs, parseMessage(t, data))
			}
			wg.Wait()
			took := time.Since(start)
			if !websocket.IsCloseError(readErr, websocket.CloseNormalClosure) {
				t.Errorf("upload ended with %v, want a normal Close", readErr)
			}
			if took < tc.d || took > tc.d+defaultGrace {
				t.Errorf("upload took %v, want %v to %v", took, tc.d, tc.d+defaultGrace)
			}
			checkMessages(t, msgs, Upload, c, tc.d)

			e := rec.waitEnded(t, 2*time.Second)
			if e.kind != Upload || e.err != nil {
				t.Errorf("observer: %+v, want an upload without error", e)
			}
			// The server reads up to the client's Close, which follows every
			// completed message and may cut the message being written.
			if e.bytes < completed || e.bytes > completed+lastSize {
				t.Errorf("server received %d bytes; client completed %d, then %d-byte message",
					e.bytes, completed, lastSize)
			}
			last := msgs[len(msgs)-1].m
			if last.AppInfo.NumBytes <= 0 || last.AppInfo.NumBytes > e.bytes {
				t.Errorf("last NumBytes %d, server total %d", last.AppInfo.NumBytes, e.bytes)
			}
			if last.TCPInfo.BytesReceived < last.AppInfo.NumBytes {
				t.Errorf("TCPInfo.BytesReceived %d < payload %d", last.TCPInfo.BytesReceived, last.AppInfo.NumBytes)
			}
			t.Logf("upload %v: %d bytes, %.0f Mbit/s, %d measurements, MinRTT %d µs",
				tc.d, e.bytes, float64(last.AppInfo.NumBytes)*8/tc.d.Seconds()/1e6, len(msgs), last.TCPInfo.MinRTT)
		})
	}
}

func TestRejectBeforeUpgrade(t *testing.T) {
	srv, _, rec := testServer(t, Options{Duration: time.Second}, 0, false)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	get := func(method, path string, hdr http.Header) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header[k] = v
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	upgrade := http.Header{
		"Connection":             {"Upgrade"},
		"Upgrade":                {"websocket"},
		"Sec-Websocket-Version":  {"13"},
		"Sec-Websocket-Key":      {"dGhlIHNhbXBsZSBub25jZQ=="},
		"Sec-Websocket-Protocol": {Subprotocol},
	}
	withProto := func(p string) http.Header {
		h := upgrade.Clone()
		if p == "" {
			h.Del("Sec-Websocket-Protocol")
		} else {
			h.Set("Sec-Websocket-Protocol", p)
		}
		return h
	}
	for _, tc := range []struct {
		name, method, path string
		hdr                http.Header
		status             int
		reason             string
	}{
		{"plain GET", "GET", DownloadPath, nil, 400, "not a WebSocket upgrade"},
		{"POST", "POST", UploadPath, upgrade, 405, "use GET"},
		{"no subprotocol", "GET", DownloadPath, withProto(""), 400, Subprotocol},
		{"other subprotocol", "GET", UploadPath, withProto("chat"), 400, Subprotocol},
		{"long query", "GET", DownloadPath + "?client_name=" + strings.Repeat("x", maxQueryLen), upgrade, 400, "longer than"},
		{"bad escape", "GET", DownloadPath + "?client_name=%zz", upgrade, 400, "unparseable"},
		{"bad UTF-8", "GET", UploadPath + "?client_name=%ff%fe", upgrade, 400, "UTF-8"},
	} {
		status, body := get(tc.method, tc.path, tc.hdr)
		if status != tc.status || !strings.Contains(body, tc.reason) || strings.Count(body, "\n") != 1 {
			t.Errorf("%s: %d %q, want %d with one line containing %q", tc.name, status, body, tc.status, tc.reason)
		}
	}
	// A real WebSocket client that forgets the subprotocol.
	_, resp, err := dial(srv, Download)
	if !errors.Is(err, websocket.ErrBadHandshake) || resp == nil || resp.StatusCode != 400 {
		t.Errorf("dial without subprotocol: %v, %v", err, resp)
	}
	started, rejected := rec.snapshot()
	if len(started) != 0 || len(rejected) != 8 {
		t.Errorf("observer saw %d started and rejections %v; want 0 and 8", len(started), rejected)
	}
}

func TestAdmit(t *testing.T) {
	var (
		mode     atomic.Value
		released atomic.Int32
	)
	mode.Store("busy")
	admit := func(r *http.Request) (func(), error) {
		switch mode.Load() {
		case "busy":
			return nil, fmt.Errorf("%w: 4 tests running, limit 4", ErrBusy)
		case "forbidden":
			return nil, errors.New("address 127.0.0.1\nnot allowed")
		}
		return func() { released.Add(1) }, nil
	}
	srv, _, rec := testServer(t, Options{Duration: 300 * time.Millisecond, Admit: admit}, 0, false)

	for _, tc := range []struct {
		mode   string
		status int
		body   string
	}{
		{"busy", 429, "ndt7: server busy: 4 tests running, limit 4\n"},
		{"forbidden", 403, "address 127.0.0.1 not allowed\n"},
	} {
		mode.Store(tc.mode)
		_, resp, err := dial(srv, Upload, Subprotocol)
		if err == nil {
			t.Fatalf("%s: upgrade succeeded", tc.mode)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || string(body) != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.mode, resp.StatusCode, body, tc.status, tc.body)
		}
	}

	mode.Store("ok")
	c := mustDial(t, srv, Download)
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 1 << 20 {
		if _, _, err := c.NextReader(); err != nil {
			break
		}
	}
	if e := rec.waitEnded(t, 2*time.Second); e.err != nil {
		t.Errorf("admitted test: %v", e.err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for released.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := released.Load(); n != 1 {
		t.Errorf("release called %d times, want 1", n)
	}
	if _, rejected := rec.snapshot(); len(rejected) != 2 || rejected[0] != 429 || rejected[1] != 403 {
		t.Errorf("observer rejections %v", rejected)
	}
}

func TestNewHandlerOptions(t *testing.T) {
	for _, o := range []Options{
		{Duration: -time.Second},
		{Duration: DefaultDuration + time.Millisecond},
		{MaxMessageSize: MinMessageSize - 1},
		{MaxScaledMessageSize: InitialMessageSize / 2},
		{MaxScaledMessageSize: 3 << 14},
		{MaxScaledMessageSize: 2 * MaxMessageSize},
	} {
		if _, err := NewHandler(o); err == nil {
			t.Errorf("NewHandler(%+v) accepted", o)
		}
	}
	h, err := NewHandler(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.duration != DefaultDuration || h.readLimit != MaxMessageSize || h.grace != 3*time.Second {
		t.Errorf("defaults: duration %v, read limit %d, grace %v", h.duration, h.readLimit, h.grace)
	}
	// 1<<13 ... 1<<20
	if len(h.messages) != 8 {
		t.Errorf("%d prepared messages, want 8", len(h.messages))
	}
}

func TestNextInterval(t *testing.T) {
	const n = 20000
	var sum time.Duration
	for range n {
		d := nextInterval()
		if d < minInterval || d > maxInterval {
			t.Fatalf("interval %v outside [%v, %v]", d, minInterval, maxInterval)
		}
		sum += d
	}
	// The mean of an exponential of mean 250 ms clamped to [25, 625] ms is
	// 25 + 250(e^-0.1 - e^-2.5) ≈ 230.7 ms; the sample mean's sd is ~1.8 ms.
	if mean := sum / n; mean < 222*time.Millisecond || mean > 240*time.Millisecond {
		t.Errorf("mean interval %v, want about 231 ms", mean)
	}
}
