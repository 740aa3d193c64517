//go:build !monitoronly

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// TestCaptureWorkers: sonde capture with two workers on loopback sees
// every packet of TCP connections once, each connection whole (both
// directions in one record: the fanout is by flow), drops and unread
// packets counted (none here), and the file it writes analyses to the
// same connections.
func TestCaptureWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
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
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
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
	const conns = 24
	for range conns {
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 3000)
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		c.Close()
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
		if c.AB.DataBytes != 3000 || c.BA.DataBytes != 3000 || c.Closed != "fin" {
			t.Errorf("%s > %s: %d and %d data bytes, closed %q; want 3000 each way and a FIN close", c.A, c.B, c.AB.DataBytes, c.BA.DataBytes, c.Closed)
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
