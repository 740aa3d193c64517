package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// internalWords are what no error line may show: a Go formatting verb
// gone wrong and net/http's internal names.
var internalWords = []string{"%!", "(<nil>)", "readLoopPeekFailLocked", "persistConn", "<nil>", "net/http"}

// checkOneClearLine fails on a stderr that shows an internal word.
func checkOneClearLine(t *testing.T, what, stderr string) {
	t.Helper()
	for _, w := range internalWords {
		if strings.Contains(stderr, w) {
			t.Errorf("%s: stderr shows %q: %s", what, w, stderr)
		}
	}
}

// TestRefusalEveryCommand: a server over its per-address connection cap
// (and the room its free test slot gives) answers every new connection
// with a 503 and its reason; every
// command that calls a sonde server exits 4 and prints that reason, not
// "not a sonde server" (exit 1) nor net/http's internal wording.
func TestRefusalEveryCommand(t *testing.T) {
	// Past the per-IP cap (1) an address may still open what its admitted
	// work has room for: here one connection for the one free test slot.
	// Two idle connections take both, so every further one is refused at
	// accept; the header timeout keeps them for the whole test.
	addr := servertest.Start(t, server.Config{MaxConnsPerIP: 1, MaxConcurrent: 1, HeaderTimeout: time.Minute,
		PerIPPerMinute: -1, WebRTCPort: -1})
	for range 2 {
		hold, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close()
		time.Sleep(50 * time.Millisecond) // let the server count it
	}
	const reason = "too many connections from your address"
	for _, args := range [][]string{
		{"test", "http://" + addr, "-t", "1s", "--no-progress"},
		{"udp", "http://" + addr, "-t", "1s"},
		{"mbm", "http://" + addr, "--mode", "udp", "--rate", "4M", "--rtt", "10ms"},
		{"mbm", "http://" + addr, "--mode", "tcp", "--rate", "4M", "--rtt", "10ms"},
	} {
		_, stderr, code := run(t, args...)
		if code != exitRefused || !strings.Contains(stderr, reason) || strings.Contains(stderr, "not a sonde server") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and the server's reason", args[:2], code, stderr, exitRefused)
		}
		checkOneClearLine(t, strings.Join(args[:2], " "), stderr)
	}
	stderr, code := runMonitorFor(10*time.Second, "--target", addr, "--store", filepath.Join(t.TempDir(), "m.db"),
		"--name", "home", "--listen", "off")
	if code != exitRefused || !strings.Contains(stderr, reason) {
		t.Errorf("monitor run: exit %d, stderr %q; want exit %d and the server's reason", code, stderr, exitRefused)
	}
	checkOneClearLine(t, "monitor run", stderr)
}

// TestLabDownUnknownID: an id that cannot be a lab's is a usage error, one
// that names no running lab says which are up; neither shows "(<nil>)".
func TestLabDownUnknownID(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lab", "down", "--state-dir", dir, "--id", "zzzzzz"}, exitUsage, `--id: lab id "zzzzzz" is not 6 hex digits`},
		{[]string{"lab", "exec", "--state-dir", dir, "--id", "zz", "client", "--", "true"}, exitUsage, `--id: lab id "zz" is not 6 hex digits`},
		{[]string{"lab", "down", "--state-dir", dir, "--id", "abcdef"}, exitFailure, `no running lab "abcdef" (no lab is up)`},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
		checkOneClearLine(t, strings.Join(tc.args[:2], " "), stderr)
	}
}

// TestErrorLinesPlain walks the ways a client command meets a server that
// is not there, not sonde, closes at once or refuses, and checks that the
// one line each prints shows no Go formatting verb or internal name.
func TestErrorLinesPlain(t *testing.T) {
	listen := func(serve func(net.Conn)) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go serve(c)
			}
		}()
		return ln.Addr().String()
	}
	closes := listen(func(c net.Conn) { c.Close() })
	// Answers before it is asked, as a connection cap does, then closes.
	early := listen(func(c net.Conn) {
		_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: close\r\n\r\nbusy\n"))
		c.Close()
	})
	garbage := listen(func(c net.Conn) {
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
		c.Close()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	ln.Close()
	for _, addr := range []string{closes, early, garbage, gone} {
		for _, args := range [][]string{
			{"test", "http://" + addr, "-t", "1s", "--no-progress"},
			{"udp", "http://" + addr, "-t", "1s"},
			{"mbm", "http://" + addr, "--mode", "tcp", "--rate", "4M", "--rtt", "10ms"},
		} {
			_, stderr, code := run(t, args...)
			if code == 0 || stderr == "" {
				t.Errorf("%v: exit %d, stderr %q", args[:2], code, stderr)
			}
			checkOneClearLine(t, strings.Join(args[:2], " "), stderr)
		}
	}
}

// TestByteLimitExit: a download cut by the server's byte limit is measured
// and reported, and the run exits 1 with the note, not 4 (nothing
// measured), for one stream and for several.
func TestByteLimitExit(t *testing.T) {
	addr := servertest.Start(t, server.Config{MaxBytes: 4 << 20, PerIPPerMinute: -1, WebRTCPort: -1, UDPAddr: "off"})
	for _, n := range []string{"1", "4"} {
		out, stderr, code := run(t, "test", "http://"+addr, "-t", "1s", "-n", n, "--no-progress")
		if code != exitFailure || !strings.Contains(stderr, "download cut short by the server's byte limit") || !strings.Contains(out, "Download") {
			t.Errorf("-n %s: exit %d, stderr %q; want exit %d, the download reported and the limit named", n, code, stderr, exitFailure)
		}
	}
}

// A refusal inside a run that measured something exits 1, not 4.
func TestMeasuredErr(t *testing.T) {
	refused := fmt.Errorf("upload: %w", &apiclient.RefusedError{Status: 410, Reason: "session ended"})
	if got := exitCode(refused); got != exitRefused {
		t.Fatalf("a refusal alone: exit %d", got)
	}
	if got := exitCode(measuredErr(refused)); got != exitFailure {
		t.Errorf("a refusal after a measurement: exit %d, want %d", got, exitFailure)
	}
	if measuredErr(nil) != nil {
		t.Error("measuredErr(nil) is not nil")
	}
	if got := exitCode(measuredErr(usagef("bad"))); got != exitUsage {
		t.Errorf("a usage error: exit %d", got)
	}
}
