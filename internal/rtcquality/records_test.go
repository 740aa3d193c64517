package rtcquality

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/pion/webrtc/v4"

	"github.com/sonde-project/sonde/internal/model"
)

// testPeer registers a peer for session id, without any network: its
// download finished with sent messages, or has not run if sent < 0.
func testPeer(t testing.TB, svc *Service, id string, sent int) *peer {
	t.Helper()
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := newPeer(svc, id, pc, ctx, cancel)
	if sent >= 0 {
		p.down = &downState{sent: sent, size: DefaultMessage, sendS: 1}
	}
	svc.mu.Lock()
	svc.peers[id] = p
	svc.mu.Unlock()
	t.Cleanup(p.close)
	return p
}

// zeros is a body of n zero bytes that counts how many were read.
type zeros struct{ n, read int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n-z.read))
	clear(p[:k])
	z.read += int64(k)
	return k, nil
}

func records(n int) []byte {
	b := make([]byte, 0, n*recordLen)
	for i := range n {
		b = binary.LittleEndian.AppendUint32(b, uint32(i))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(i)))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(i)+5))
	}
	return b
}

func postRecords(svc *Service, id string, body io.Reader, length int64) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/s/"+id+"/webrtc/records", body)
	req.ContentLength = length
	rec := httptest.NewRecorder()
	svc.HandleRecords(rec, req, Session{ID: id, Ctx: context.Background()})
	return rec
}

// TestRecordsStateFirst: records the session cannot take (no download yet,
// or its records already in) are refused before one byte of the body is
// read; the endpoint once read 80 MiB first.
func TestRecordsStateFirst(t *testing.T) {
	svc := New(Config{})
	p := testPeer(t, svc, "s1", -1)
	for _, length := range []int64{-1, 80 << 20} {
		z := &zeros{n: 80 << 20}
		if rec := postRecords(svc, "s1", z, length); rec.Code != http.StatusConflict || z.read != 0 {
			t.Errorf("before the download (length %d): %d %s, read %d bytes", length, rec.Code, rec.Body, z.read)
		}
	}
	p.mu.Lock()
	p.down = &downState{sent: 10, size: DefaultMessage, sendS: 1, have: true}
	p.mu.Unlock()
	z := &zeros{n: 80 << 20}
	if rec := postRecords(svc, "s1", z, -1); rec.Code != http.StatusConflict || z.read != 0 {
		t.Errorf("records again: %d %s, read %d bytes", rec.Code, rec.Body, z.read)
	}
	if rec := postRecords(svc, "nobody", &zeros{n: 20}, 20); rec.Code != http.StatusNotFound {
		t.Errorf("no test: %d", rec.Code)
	}
}

// TestRecordsBounded: the body is bounded by what the download sent, with
// or without a Content-Length, and a body within it is taken.
func TestRecordsBounded(t *testing.T) {
	const sent = 100
	limit := 2*sent + 64
	svc := New(Config{})
	testPeer(t, svc, "s1", sent)
	over := int64(limit+1) * recordLen
	z := &zeros{n: over}
	if rec := postRecords(svc, "s1", z, over); rec.Code != http.StatusRequestEntityTooLarge || z.read != 0 {
		t.Errorf("declared too long: %d %s, read %d", rec.Code, rec.Body, z.read)
	}
	z = &zeros{n: 80 << 20}
	if rec := postRecords(svc, "s1", z, -1); rec.Code != http.StatusRequestEntityTooLarge || z.read > int64(limit)*recordLen+1 {
		t.Errorf("chunked too long: %d %s, read %d (limit %d bytes)", rec.Code, rec.Body, z.read, limit*recordLen)
	}
	for _, tc := range []struct {
		name string
		body []byte
		want int
	}{
		{"partial record", make([]byte, 30), http.StatusBadRequest},
		{"bad datagrams", nil, http.StatusBadRequest},
		{"whole", records(sent), http.StatusOK},
		{"twice", records(sent), http.StatusConflict},
	} {
		req := httptest.NewRequest(http.MethodPost, "/s/s1/webrtc/records?datagrams=12", bytes.NewReader(tc.body))
		if tc.name == "bad datagrams" {
			req.URL.RawQuery = "datagrams=-3"
		}
		rec := httptest.NewRecorder()
		svc.HandleRecords(rec, req, Session{ID: "s1", Ctx: context.Background()})
		if rec.Code != tc.want {
			t.Fatalf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
		if tc.want == http.StatusOK {
			var res model.WebRTCResult
			if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || res.Download == nil || res.Download.Received != sent || res.Download.Lost != 0 {
				t.Fatalf("%s: %v %s", tc.name, err, rec.Body)
			}
		}
	}
}

// FuzzRecords drives the records endpoint with any body and datagram
// count: no panic, 200 or a 4xx, and a bounded allocation per call.
func FuzzRecords(f *testing.F) {
	f.Add(records(3), "5")
	f.Add(records(1000), "")
	f.Add([]byte("not records"), "x")
	f.Add(append(records(1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), "-1")
	svc := New(Config{})
	p := testPeer(f, svc, "s1", 1000)
	f.Fuzz(func(t *testing.T, body []byte, datagrams string) {
		p.mu.Lock()
		p.down.have = false
		p.mu.Unlock()
		req := httptest.NewRequest(http.MethodPost, "/s/s1/webrtc/records", bytes.NewReader(body))
		req.URL.RawQuery = "datagrams=" + datagrams
		rec := httptest.NewRecorder()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		svc.HandleRecords(rec, req, Session{ID: "s1", Ctx: context.Background()})
		runtime.ReadMemStats(&m1)
		if c := rec.Code; c != http.StatusOK && (c < 400 || c > 499) {
			t.Fatalf("status %d: %s", c, rec.Body)
		}
		// Analyze allocates per message sent (1000 here) and per record.
		if d := m1.TotalAlloc - m0.TotalAlloc; d > 4<<20 {
			t.Fatalf("%d bytes of input allocated %d bytes", len(body), d)
		}
	})
}
