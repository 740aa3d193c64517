package librespeed

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/stream"
)

// backend is the handler on loopback with the server's counts of each test.
type backend struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sums []httpload.Summary
	load *httpload.Registry
}

func newBackend(t *testing.T, maxBytes int64, admit func(*http.Request) (func(), error)) *backend {
	t.Helper()
	payload, err := stream.NewPayload()
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{}
	if admit == nil {
		admit = func(*http.Request) (func(), error) { return func() {}, nil }
	}
	b.load, err = httpload.New(httpload.Options{Protocol: "librespeed", MaxTime: 30 * time.Second,
		MaxBytes: maxBytes, Idle: 100 * time.Millisecond, Admit: admit,
		Done: func(s httpload.Summary) { b.mu.Lock(); b.sums = append(b.sums, s); b.mu.Unlock() }}, payload)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(b.load, "sonde test")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	return b
}

// summary waits for the backend's test to end and returns its counts.
func (b *backend) summary(t *testing.T) httpload.Summary {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.mu.Lock()
		if len(b.sums) > 0 {
			s := b.sums[len(b.sums)-1]
			b.sums = nil
			b.mu.Unlock()
			return s
		}
		b.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the backend's test did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The worker's settings (librespeed/speedtest speedtest_worker.js, 5.x).
const (
	dlStreams       = 6
	ulStreams       = 3
	garbageChunks   = 100
	ulBlobBytes     = 20 << 20
	overheadFactor  = 1.06
	replayPhase     = 2 * time.Second
	streamStagger   = 100 * time.Millisecond
	maxInFlightPerS = 16 << 20 // socket buffers of one loopback stream, generously
)

func cacheBuster() string { return fmt.Sprint(mrand.Float64()) }

// TestReplayWorker replays LibreSpeed's worker: 6 download streams
// re-requesting garbage.php?cors=true&r=…&ckSize=100 and 3 upload streams
// posting 20 MB blobs to empty.php?cors=true&r=…, each phase its fixed
// time, then checks what the worker would report against the server's own
// counts: the bytes the worker counted are the bytes the server moved, up
// to what was in flight when the phase cut the streams, and every upload
// it saw answered had arrived whole.
func TestReplayWorker(t *testing.T) {
	b := newBackend(t, 0, nil)
	c := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxConnsPerHost: 0}}
	base := b.srv.URL + "/backend/"

	// getIP and the ping, as the worker asks for them.
	var ip IPReply
	resp, err := c.Get(base + "getIP.php?cors=true&r=" + cacheBuster())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(resp.Body).Decode(&ip); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ip.ProcessedString != "127.0.0.1 - localhost IPv4 access" {
		t.Fatalf("getIP: %q", ip.ProcessedString)
	}
	resp, err = c.Get(base + "empty.php?cors=true&r=" + cacheBuster())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("ping: %s, %d bytes, CORS %q", resp.Status, len(body), resp.Header.Get("Access-Control-Allow-Origin"))
	}

	// Download.
	var loaded atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), replayPhase)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range dlStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * streamStagger)
			buf := make([]byte, 64<<10)
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
					base+"garbage.php?cors=true&r="+cacheBuster()+fmt.Sprintf("&ckSize=%d", garbageChunks), nil)
				resp, err := c.Do(req)
				if err != nil {
					return
				}
				for {
					n, err := resp.Body.Read(buf)
					loaded.Add(int64(n))
					if err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	cancel()
	elapsed := time.Since(start)
	dl := b.summary(t)
	workerDl := float64(loaded.Load()) * 8 * overheadFactor / 1e6 / elapsed.Seconds()
	serverDl := float64(dl.Sent) * 8 / 1e6 / elapsed.Seconds()
	t.Logf("download: worker counted %d B (%.0f Mbit/s as it reports, ×1.06), server sent %d B (%.0f Mbit/s) over %d requests",
		loaded.Load(), workerDl, dl.Sent, serverDl, dl.Flows)
	if dl.Sent < loaded.Load() || dl.Sent-loaded.Load() > dlStreams*maxInFlightPerS {
		t.Fatalf("download: server sent %d B, worker counted %d B: more apart than the streams' buffers", dl.Sent, loaded.Load())
	}
	// Without its 6 % overhead allowance the worker's figure is the
	// server's, less what was in flight at the cut.
	if d := workerDl / overheadFactor / serverDl; d > 1 || 1-d > float64(dlStreams*maxInFlightPerS)/float64(dl.Sent) {
		t.Fatalf("download: worker figure / 1.06 is %.3f of the server's", d)
	}

	// Upload: 20 MB blobs, each answered only once it arrived whole.
	blob := make([]byte, ulBlobBytes)
	_, _ = rand.Read(blob)
	var written, answeredBytes atomic.Int64
	var early atomic.Int64
	ctx, cancel = context.WithTimeout(context.Background(), replayPhase)
	start = time.Now()
	for i := range ulStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * streamStagger)
			for ctx.Err() == nil {
				pr, pw := io.Pipe()
				var mine atomic.Int64
				go func() {
					for off := 0; off < len(blob); off += 256 << 10 {
						n, err := pw.Write(blob[off:min(off+256<<10, len(blob))])
						mine.Add(int64(n))
						written.Add(int64(n))
						if err != nil {
							return
						}
					}
					pw.Close()
				}()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"empty.php?cors=true&r="+cacheBuster(), pr)
				req.ContentLength = ulBlobBytes
				req.Header.Set("Content-Type", "application/octet-stream")
				resp, err := c.Do(req)
				if err != nil {
					pr.CloseWithError(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					if mine.Load() < ulBlobBytes {
						early.Add(1)
					}
					answeredBytes.Add(ulBlobBytes)
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	elapsed = time.Since(start)
	ul := b.summary(t)
	t.Logf("upload: client wrote %d B, %d B in answered posts (%.0f Mbit/s as the worker counts completed bytes), server read %d B (%.0f Mbit/s)",
		written.Load(), answeredBytes.Load(), float64(answeredBytes.Load())*8*overheadFactor/1e6/elapsed.Seconds(),
		ul.Received, float64(ul.Received)*8/1e6/elapsed.Seconds())
	if early.Load() > 0 {
		t.Fatalf("%d uploads answered before their whole body was sent (librespeed/speedtest#819)", early.Load())
	}
	if answeredBytes.Load() == 0 {
		t.Fatal("no upload completed in the phase")
	}
	if ul.Received < answeredBytes.Load() || ul.Received > written.Load() {
		t.Fatalf("server read %d B; answered posts carried %d B, client wrote %d B", ul.Received, answeredBytes.Load(), written.Load())
	}
}
