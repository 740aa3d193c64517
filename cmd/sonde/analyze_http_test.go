//go:build !monitoronly

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestAnalyzeHTTPOutputs runs `analyze` on an HTTP/1.1 exchange: the text
// sections, the JSON page loads and the --html report.
func TestAnalyzeHTTPOutputs(t *testing.T) {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	seq := [2]uint32{100, 5000}
	at := time.Duration(0)
	put := func(d time.Duration, dir int, flags byte, payload string) {
		at += d
		b := make([]byte, 40+len(payload))
		b[0], b[8], b[9] = 0x45, 64, 6
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		src, dst, sp, dp := byte(1), byte(2), uint16(40000), uint16(80)
		if dir == 1 {
			src, dst, sp, dp = dst, src, dp, sp
		}
		copy(b[12:], []byte{198, 18, 1, src, 198, 18, 1, dst})
		tcp := b[20:]
		binary.BigEndian.PutUint16(tcp, sp)
		binary.BigEndian.PutUint16(tcp[2:], dp)
		binary.BigEndian.PutUint32(tcp[4:], seq[dir])
		binary.BigEndian.PutUint32(tcp[8:], seq[dir^1])
		tcp[12], tcp[13] = 5<<4, flags
		binary.BigEndian.PutUint16(tcp[14:], 65535)
		copy(tcp[20:], payload)
		seq[dir] += uint32(len(payload))
		if flags&0x03 != 0 {
			seq[dir]++
		}
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: t0.Add(at), CaptureLength: len(b), Length: len(b)}, b); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 0, 0x02, "")
	put(50*time.Millisecond, 1, 0x12, "")
	put(50*time.Millisecond, 0, 0x10, "")
	put(time.Millisecond, 0, 0x18, "GET /index.html HTTP/1.1\r\nHost: example.test\r\n\r\n")
	put(100*time.Millisecond, 1, 0x18, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	put(50*time.Millisecond, 0, 0x11, "")
	put(50*time.Millisecond, 1, 0x11, "")
	dir := t.TempDir()
	path := filepath.Join(dir, "http.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := newAnalyzeCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append(args, path))
		err := cmd.Execute()
		return out.String(), err
	}
	text, err := run()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"HTTP page loads", "HTTP/1.x connections", "/index.html", "client (fin)", "100.0"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	js, err := run("--json", "-")
	if err != nil || !strings.Contains(js, `"http_pages"`) || !strings.Contains(js, `"ttfb_ms": 100`) {
		t.Errorf("json (%v):\n%s", err, js)
	}
	// The saved JSON re-renders to the text the run printed, but for the
	// last line: the analyser's own speed, measured anew in every run.
	saved := filepath.Join(dir, "a.json")
	if err := os.WriteFile(saved, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	again := mustSonde(t, "report", saved)
	speed := func(s string) string { return s[:max(strings.LastIndex(s, "\nanalysed at "), 0)] }
	if !strings.Contains(again, "\nanalysed at ") || speed(again) != speed(text) {
		t.Errorf("re-rendered analysis differs from the run's:\n%s\nrun printed:\n%s", again, text)
	}
	report := filepath.Join(dir, "r.html")
	if _, err := run("--html", report); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(b), "page load waterfall") || !strings.Contains(string(b), "Time-sequence graph") {
		t.Errorf("html report (%v): %d bytes", err, len(b))
	}
	if _, err := run("--html", filepath.Join(dir, "no", "such", "dir.html")); err == nil || !strings.Contains(err.Error(), "--html") {
		t.Errorf("unwritable --html: %v", err)
	}
}
