//go:build !monitoronly

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// TestCaptureWorkers: sonde capture with two workers on loopback sees
// every packet of HTTP/1.1 connections once, each connection whole (both
// directions in one record: the fanout is by flow), drops and unread
// packets counted (none here), and the file it writes analyses to the
// same connections.
func TestCaptureWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root")
	}
	body := strings.Repeat("x", 3000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	file := filepath.Join(t.TempDir(), "lo.pcap")
	type result struct {
		stdout, stderr string
		code           int
	}
	done := make(chan result, 1)
	go func() {
		o, e, c := run(t, "capture", "-i", "lo", "--workers", "2", "--ring", "1MiB", "-t", "2500ms", "-w", file, "--json", "-", fmt.Sprintf("tcp port %d", port))
		done <- result{o, e, c}
	}()
	time.Sleep(700 * time.Millisecond) // the sockets open
	// A connection a request.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	const conns = 24
	for range conns {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || len(b) != len(body) {
			t.Fatalf("GET: %d bytes, %v", len(b), err)
		}
		resp.Body.Close()
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("capture: exit %d: %s", r.code, r.stderr)
	}
	var res model.Analysis
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("capture --json: %v\n%s", err, r.stdout)
	}
	l := res.Live
	if l == nil || l.Workers != 2 || l.RingBytes != 1<<20 || l.KernelDropped != 0 || l.Unread != 0 || l.KernelReceived != 2*res.Packets {
		t.Fatalf("live %+v for %d packets (loopback: each received twice)", l, res.Packets)
	}
	if !strings.Contains(r.stderr, "2 worker(s)") {
		t.Errorf("stderr %q does not say how it captures", r.stderr)
	}
	if len(res.TCP) != conns {
		t.Fatalf("%d TCP connections, want %d", len(res.TCP), conns)
	}
	for _, c := range res.TCP {
		if c.AB.DataBytes == 0 || c.BA.DataBytes < uint64(len(body)) || c.Closed == "" {
			t.Errorf("%s > %s: %d and %d data bytes, closed %q; want a request, the %d-byte answer and a close", c.A, c.B, c.AB.DataBytes, c.BA.DataBytes, c.Closed, len(body))
		}
	}
	// The file holds the same packets: its analysis has the same
	// connections and counts.
	o, e, code := run(t, "analyze", "--workers", "1", "--json", "-", file)
	var fa model.Analysis
	if code != 0 || json.Unmarshal([]byte(o), &fa) != nil {
		t.Fatalf("analyze of the capture: exit %d: %s", code, e)
	}
	if fa.Packets != res.Packets || len(fa.TCP) != conns {
		t.Errorf("the file: %d packets, %d connections; the capture: %d, %d", fa.Packets, len(fa.TCP), res.Packets, conns)
	}
}

// TestCaptureFlagsChecked: --ring and --workers out of bounds are usage
// errors before any socket opens.
func TestCaptureFlagsChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--ring", "64KiB"}, {"--ring", "2GiB"}, {"--ring", "lots"}, {"--workers", "-1"}, {"--workers", "100000"}, {"--workers", "65"},
	} {
		_, stderr, code := run(t, append([]string{"capture", "-i", "lo"}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, args[0]) {
			t.Errorf("%v: exit %d, %q; want a usage error naming %s", args, code, stderr, args[0])
		}
	}
}
