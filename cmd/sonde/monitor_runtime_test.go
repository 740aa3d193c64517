package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/monitor"
)

// TestMonitorRunRuntimeFlagErrors: a bad --memory-limit or --debug-pprof
// is one line and exit 2, before any store is opened.
func TestMonitorRunRuntimeFlagErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	for _, a := range [][]string{
		{"--memory-limit", "1MiB"},
		{"--memory-limit", "23MiB"},
		{"--memory-limit", "lots"},
		{"--memory-limit", "-48MiB"},
		{"--debug-pprof", "nope"},
		{"--debug-pprof", "127.0.0.1"},
	} {
		args := append([]string{"--target", "stamp://127.0.0.1:9", "--store", db, "--listen", "off"}, a...)
		_, stderr, code := runCmd(newMonitorRunCmd(), args...)
		if code != exitUsage || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, a[0]) {
			t.Errorf("%q: exit %d, %q; want 2 and one line naming the flag", a, code, stderr)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a bad flag opened the store")
	}
}

// TestRuntimeOpts: the memory limit and the GC's target are set, the
// pprof listener serves the profiles until stopped.
func TestRuntimeOpts(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	t.Setenv("GOGC", "")
	oldGC := debug.SetGCPercent(100)
	defer debug.SetGCPercent(oldGC)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop, err := runtimeOpts{memLimit: 40 << 20, pprof: addr}.apply(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 40<<20 {
		t.Errorf("memory limit %d, want %d", got, 40<<20)
	}
	if got := debug.SetGCPercent(100); got != monitor.GCPercent {
		t.Errorf("GC percent %d, want %d", got, monitor.GCPercent)
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("heap profile: %s, %.80q", resp.Status, body)
	}
	stop()
	if _, err := c.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Error("pprof still served after stop")
	}
}
