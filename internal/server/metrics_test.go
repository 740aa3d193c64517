package server

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// scrape returns /metrics as name{labels} → value.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("/metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestRuntimeMetrics: /metrics carries the Go runtime's and the process's
// own metrics, on each server's own registry (two servers in one process
// register them without a clash).
func TestRuntimeMetrics(t *testing.T) {
	_, addr := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off"})
	_, addr2 := start(t, Config{PerIPPerMinute: -1, UDPAddr: "off"})
	for _, a := range []string{addr, addr2} {
		m := scrape(t, a)
		// The serving goroutines and the listening socket alone make these
		// at least 1; a missing collector makes them absent.
		for _, name := range []string{"go_goroutines", "process_open_fds", "process_resident_memory_bytes", "go_memstats_heap_alloc_bytes"} {
			if v, ok := m[name]; !ok || !(v >= 1) {
				t.Errorf("%s: %s = %v (present %v)", a, name, v, ok)
			}
		}
		if _, ok := m["sonde_active_tests"]; !ok {
			t.Errorf("%s: sonde_active_tests missing", a)
		}
	}
}
