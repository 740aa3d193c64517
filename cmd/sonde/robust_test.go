package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/pcap"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
	"github.com/sonde-project/sonde/internal/store"
)

// run executes the root command with args and returns stdout, stderr and
// the exit status main would use.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code := exitCode(err)
	if err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != errSilent {
			errb.WriteString(oneLine(err))
		}
	}
	return out.String(), errb.String(), code
}

// TestUsageErrors: bad values are refused before anything is measured,
// with exit 2 and one line; every output path is checked up front.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"analyze", "--interval", "0", "x"},
		{"analyze", "--interval", "-1s", "x"},
		{"analyze", "--interval", "1ns", "x"},
		{"analyze", "--idle-timeout", "-1s", "x"},
		{"analyze", "--observer", "9Z", "--truth", "/dev/null", "x"},
		{"analyze", "--observer", "0A", "--truth", "/dev/null", "x"},
		{"analyze", "--html", "/proc/x.html", "x"},
		{"analyze", filepath.Join(dir, "missing.pcap")},
		{"capture", "-i", "lo", "-c", "-5"},
		{"capture", "-i", "lo", "-t", "-1s"},
		{"capture", "-i", "lo", "-w", dir},
		{"serve", "--udp-max-rate", "-5"},
		{"serve", "--udp-max-rate", "NaN"},
		{"serve", "--udp-max-rate", "0"},
		{"udp", "--json", "/proc/x.json", "-t", "1s"},
		{"udp", "--html", filepath.Join(dir, "no", "such", "dir.html")},
		{"udp", "--raw", "/proc/raw.jsonl"},
		{"udp", "-t", "-1s"},
		{"udp", "--timeout", "0"},
		{"test", "--json", "/proc/x.json", "-t", "1s"},
		{"test", "--html", dir},
		{"test", "--probe-interval", "-1ms"},
		{"test", "--probe-interval", "1h"},
		{"test", "--max-streams", "100000"},
		{"test", "--baseline-samples", "-3"},
		{"test", "-t", "1000h"},
		{"test", "a", "b"},
		{"udp", "--no-such-flag"},
		{"no-such-command"},
		// One CLI language: two documents on stdout would mix; negative
		// limits are errors ("off" or 0 is no limit); rates take units.
		{"analyze", "--json", "-", "--csv", "-", "x"},
		{"udp", "--json", "-", "--raw", "-"},
		{"test", "--json", "-", "--html", "-"},
		{"analyze", "--samples", "x"},
		{"serve", "--per-ip-rate", "-1"},
		{"serve", "--max-bytes", "-5"},
		{"serve", "--max-bytes", "10X"},
		{"serve", "--udp-max-bitrate", "100MB"},
		{"serve", "--webrtc-port", "-1"},
		{"serve", "-v"},
		{"-v"},
		{"capture", "-i", "lo", "-c", "-1"},
		{"capture", "-i", "lo", "--filter", "tcp", "udp"},
		{"test", "--link-rate", "0"},
		{"test", "--link-rate", "fast"},
		{"udp", "--classes", "ef:46@8081"},
		{"udp", "--classes", "ef:46/src=70000"},
		{"emulate", "--ns-a", "a", "--ns-b", "b", "--spin", "-1us"},
		{"emulate", "--ns-a", "a", "--ns-b", "b", "--link", "rate=-5M"},
	}
	for _, args := range cases {
		start := time.Now()
		out, stderr, code := run(t, args...)
		if code != exitUsage || out != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, one line on stderr", args, code, out, stderr)
		}
		// Refused up front: no run was started.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%v: took %v before refusing", args, d)
		}
	}
	if _, err := os.Stat("/proc/x.json"); err == nil {
		t.Error("a check created /proc/x.json")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("checks left files behind: %v", ents)
	}
}

// TestStdoutOneDocument: an output to stdout (-) is the only thing there:
// the text summary is not mixed in.
func TestStdoutOneDocument(t *testing.T) {
	for _, args := range [][]string{
		{"udp", "-t", "200ms", "--probe-interval", "20ms", "--json", "-"},
		{"udp", "-t", "200ms", "--probe-interval", "20ms", "--html", "-"},
	} {
		out, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if strings.Contains(out, "flow probe") {
			t.Errorf("%v: the text summary is mixed into stdout:\n%.300s", args, out)
		}
		if !strings.HasPrefix(out, "{") && !strings.HasPrefix(strings.ToLower(out), "<!doctype html>") {
			t.Errorf("%v: stdout is not one document:\n%.300s", args, out)
		}
	}
}

// TestRefusedExitCode: a server's refusal (a wrong token) exits 4, apart
// from a failed measurement (1).
func TestRefusedExitCode(t *testing.T) {
	addr := servertest.Start(t, server.Config{UDPAddr: "off", Token: "right", PerIPPerMinute: -1, HistoryDB: store.Memory})
	_, stderr, code := run(t, "test", "http://"+addr, "--token", "wrong", "-t", "1s", "--no-progress")
	if code != exitRefused {
		t.Errorf("exit %d, want %d (refused); stderr %q", code, exitRefused, stderr)
	}
}

// TestOutputWriteFailureKeepsSummary: when an output passes the check but
// writing it fails at the end (/dev/full), the text summary still goes to
// stdout, even with --quiet, and the run fails.
func TestOutputWriteFailureKeepsSummary(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	out, stderr, code := run(t, "udp", "-t", "200ms", "--probe-interval", "10ms", "--json", "/dev/full", "-q")
	if code != exitFailure || !strings.Contains(out, "flow probe") || !strings.Contains(stderr, "/dev/full") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestAnalyzeDamagedCapture: a damaged file is analysed up to the damage,
// the analysis is printed, the damage goes to stderr and the status is 3.
func TestAnalyzeDamagedCapture(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkRaw, 65535)
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 40)
	pkt[0], pkt[3], pkt[8], pkt[9] = 0x45, 40, 64, 6
	copy(pkt[12:], []byte{198, 18, 1, 1, 198, 18, 1, 2})
	for i := range 5 {
		if err := w.Write(int64(1700000000e9+i*1e6), pkt, len(pkt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	b = b[:len(b)-10] // the last record is cut short
	path := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"analyze", path}, {"analyze", "--json", "-", path}} {
		out, stderr, code := run(t, args...)
		if code != exitDamaged {
			t.Errorf("%v: exit %d, want %d", args, code, exitDamaged)
		}
		if !strings.Contains(out, "4 packets") && !strings.Contains(out, `"packets": 4`) {
			t.Errorf("%v: stdout lacks the analysis of the 4 readable packets:\n%s", args, out)
		}
		if strings.Contains(out, "error:") || !strings.Contains(stderr, "damaged at byte") {
			t.Errorf("%v: damage not on stderr alone: stdout %q stderr %q", args, out, stderr)
		}
	}
}
