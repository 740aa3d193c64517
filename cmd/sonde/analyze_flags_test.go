//go:build !monitoronly

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/pcap/pcaptest"
)

// TestAnalyzeObserverChecked: --observer is a usage error (exit 2, one
// line naming the flag) when it is not LINK and END, with or without
// --truth, before any file is read.
func TestAnalyzeObserverChecked(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.pcap")
	for _, obs := range []string{"9Z", "0A", "A", "1", "xB", "-1A", "99999B"} {
		for _, cmd := range []string{"analyze", "capture"} {
			args := []string{cmd, "--observer", obs}
			if cmd == "analyze" {
				args = append(args, missing)
			} else {
				args = append(args, "-i", "lo")
			}
			_, stderr, code := run(t, args...)
			if code != exitUsage || !strings.Contains(stderr, "--observer") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("%v: exit %d, stderr %q; want a one-line usage error about --observer", args, code, stderr)
			}
		}
	}
	for _, obs := range []string{"1A", "2b", "12B"} {
		if _, _, err := passive.ParseObserver(obs); err != nil {
			t.Errorf("--observer %s: %v", obs, err)
		}
	}
}

// TestAnalyzeNDJSON: --ndjson writes one line per connection; alone it
// keeps no record (the text summary gives the count and the file), with
// --json both have every connection.
func TestAnalyzeNDJSON(t *testing.T) {
	capFile := pcaptest.SYNs(t, 5)
	dir := t.TempDir()
	nd, js := filepath.Join(dir, "c.ndjson"), filepath.Join(dir, "a.json")
	lines := func() []string {
		b, err := os.ReadFile(nd)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	out, stderr, code := run(t, "analyze", "--ndjson", nd, capFile)
	if code != 0 || !strings.Contains(out, "5 TCP connections and 0 QUIC flows: one line each in "+nd) || strings.Contains(out, "TCP connections (RTT") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if l := lines(); len(l) != 5 || !strings.HasPrefix(l[0], `{"tcp":{"a":"198.18.1.1:40000"`) {
		t.Fatalf("ndjson: %q", l)
	}
	if _, stderr, code := run(t, "analyze", "--ndjson", nd, "--json", js, capFile); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res model.Analysis
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &res); err != nil || len(res.TCP) != 5 || len(lines()) != 5 {
		t.Fatalf("json: %v, %d connections; ndjson %d lines", err, len(res.TCP), len(lines()))
	}
	if _, stderr, code := run(t, "analyze", "--ndjson", "-", "--json", "-", capFile); code != exitUsage || !strings.Contains(stderr, "stdout") {
		t.Errorf("two outputs on stdout: exit %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, "analyze", "--ndjson", dir, capFile); code != exitUsage || !strings.Contains(stderr, "--ndjson") {
		t.Errorf("--ndjson DIR: exit %d, %q", code, stderr)
	}
}
