package monitor

import (
	"strings"
	"testing"
)

// TestParseMemoryLimit: a size of at least 24 MiB or off; each refusal
// names --memory-limit.
func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{"48MiB": 48 << 20, "off": 0, "0": 0, "24MiB": MinMemoryLimit} {
		if got, err := ParseMemoryLimit(in); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"16MiB": "--memory-limit 16MiB: at least 24 MiB, or off", "lots": "--memory-limit: "} {
		if _, err := ParseMemoryLimit(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
