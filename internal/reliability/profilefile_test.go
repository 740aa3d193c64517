package reliability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadProfilesFile: a profile file reads back; a missing, oversized
// or bad one is one error without the "profiles:" prefix.
func TestReadProfilesFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "p.json")
	os.WriteFile(good, []byte(`{"profiles":[{"name":"x","latency":"100ms","reliability":0.99}]}`), 0o644)
	if p, err := ReadProfilesFile(good); err != nil || len(p) != 1 || p[0].Name != "x" {
		t.Fatalf("%+v, %v", p, err)
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, []byte(`{"profiles":[`+strings.Repeat(" ", MaxProfileFile)+`]}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"profiles":[{"name":"x","latency":"1s","reliability":1.5}]}`), 0o644)
	for _, p := range []string{filepath.Join(dir, "none.json"), big, bad} {
		if _, err := ReadProfilesFile(p); err == nil || strings.HasPrefix(err.Error(), "profiles:") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestParseThresholds: positive durations only.
func TestParseThresholds(t *testing.T) {
	if l, err := ParseThresholds("30ms, 1.2s"); err != nil || len(l) != 2 || l[1] != int64(1200*time.Millisecond) {
		t.Fatalf("%v %v", l, err)
	}
	for _, s := range []string{"0ms", "fast", "", ",", strings.Repeat("1s,", 400)} {
		if _, err := ParseThresholds(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
