package main

import (
	"path/filepath"
	"strings"
	"testing"
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
		if _, _, err := parseObserver(obs); err != nil {
			t.Errorf("--observer %s: %v", obs, err)
		}
	}
}
