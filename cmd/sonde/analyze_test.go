//go:build !monitoronly

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/sonde-project/sonde/internal/model"
)

// TestAnalyzeCLI runs `analyze` on a small pcap with a TCP exchange and a
// truncated tail: text, JSON and CSV outputs and the damage report.
func TestAnalyzeCLI(t *testing.T) {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeRaw); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	seg := func(src, dst byte, sport, dport uint16, seq, ack uint32, flags byte, tsval, tsecr uint32, n int) []byte {
		b := make([]byte, 20+32+n)
		b[0], b[8], b[9] = 0x45, 64, 6
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		copy(b[12:], []byte{198, 18, 1, src, 198, 18, 1, dst})
		tcp := b[20:]
		binary.BigEndian.PutUint16(tcp, sport)
		binary.BigEndian.PutUint16(tcp[2:], dport)
		binary.BigEndian.PutUint32(tcp[4:], seq)
		binary.BigEndian.PutUint32(tcp[8:], ack)
		tcp[12], tcp[13] = 8<<4, flags
		binary.BigEndian.PutUint16(tcp[14:], 1000)
		copy(tcp[20:], []byte{1, 1, 8, 10})
		binary.BigEndian.PutUint32(tcp[24:], tsval)
		binary.BigEndian.PutUint32(tcp[28:], tsecr)
		return b
	}
	at := time.Duration(0)
	put := func(d time.Duration, b []byte) {
		at += d
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: t0.Add(at), CaptureLength: len(b), Length: len(b)}, b); err != nil {
			t.Fatal(err)
		}
	}
	put(0, seg(1, 2, 40000, 80, 0, 0, 0x02, 100, 0, 0))
	put(20*time.Millisecond, seg(2, 1, 80, 40000, 0, 1, 0x12, 500, 100, 0))
	seq := uint32(1)
	for i := range 50 {
		put(time.Millisecond, seg(1, 2, 40000, 80, seq, 1, 0x10, uint32(101+i), uint32(500+i), 100))
		put(20*time.Millisecond, seg(2, 1, 80, 40000, 1, seq+100, 0x10, uint32(501+i), uint32(101+i), 0))
		seq += 100
	}
	data := buf.Bytes()
	path := filepath.Join(t.TempDir(), "x.pcap")
	if err := os.WriteFile(path, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		cmd := newAnalyzeCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append(args, path))
		// The capture is cut short: its status says damaged (3), and
		// what was read is still reported.
		var ee *exitError
		if err := cmd.Execute(); !errors.As(err, &ee) || ee.code != exitDamaged {
			t.Fatalf("exit: %v, want the damaged status", err)
		}
		return out.String()
	}
	text := run()
	for _, want := range []string{"198.18.1.1:40000 > 198.18.1.2:80", "damaged at byte", "20.00/20.00/20.00"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
	if js := run("--json", "-"); !strings.Contains(js, `"schema": "sonde.analyze/v1"`) || !strings.Contains(js, `"damage_offset"`) {
		t.Errorf("json output:\n%s", js)
	}
	csvOut := run("--csv", "-")
	if lines := strings.Count(csvOut, "\n"); lines < 90 || !strings.Contains(csvOut, "ts-side-b") {
		t.Errorf("csv output (%d lines):\n%.400s", lines, csvOut)
	}
	// --samples FILE streams every sample --csv has, one JSON line each.
	samples := filepath.Join(t.TempDir(), "s.ndjson")
	run("--samples", samples)
	b, err := os.ReadFile(samples)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	csvSamples := 0 // the output also has cobra's usage (the exit status is an error)
	for _, l := range strings.Split(csvOut, "\n") {
		if strings.Contains(l, ",198.18.1.1:40000 > 198.18.1.2:80,") {
			csvSamples++
		}
	}
	if len(lines) != csvSamples || csvSamples < 90 {
		t.Errorf("--samples: %d lines, --csv %d samples", len(lines), csvSamples)
	}
	var s model.PassiveRTT
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil || s.Flow != "198.18.1.1:40000 > 198.18.1.2:80" || s.RTTMs <= 0 {
		t.Errorf("--samples line %q: %v", lines[len(lines)-1], err)
	}
}
