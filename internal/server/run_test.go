package server

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseLimits: units and off read into the config; a bad value names
// its flag.
func TestParseLimits(t *testing.T) {
	var cfg Config
	if err := ParseLimits(&cfg, "500MiB", "off", "1G", "off"); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxBytes != 500<<20 || cfg.PerIPPerMinute != -1 || cfg.UDPMaxBitrate != 1e9 || cfg.WebRTCPort != -1 {
		t.Errorf("%+v", cfg)
	}
	for _, c := range []struct {
		args [4]string
		flag string
	}{
		{[4]string{"-1", "60", "200M", "0"}, "--max-bytes"},
		{[4]string{"off", "x", "200M", "0"}, "--per-ip-rate"},
		{[4]string{"off", "60", "0", "0"}, "--udp-max-bitrate"},
		{[4]string{"off", "60", "200M", "70000"}, "--webrtc-port"},
	} {
		if err := ParseLimits(&cfg, c.args[0], c.args[1], c.args[2], c.args[3]); err == nil || !strings.HasPrefix(err.Error(), c.flag) {
			t.Errorf("%v: %v, want a %s error", c.args, err, c.flag)
		}
	}
}

// TestIperf3Addr: the port on the listen address's host, off, or an error
// naming the flag.
func TestIperf3Addr(t *testing.T) {
	for _, c := range []struct{ listen, port, want, err string }{
		{":8080", "5201", ":5201", ""},
		{"127.0.0.1:8080", "off", "off", ""},
		{":8080", "99999", "", "--iperf3-port"},
		{"nohost", "5201", "", "--addr"},
	} {
		got, err := Iperf3Addr(c.listen, c.port)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("Iperf3Addr(%q, %q) = %q, %v; want %q, %q", c.listen, c.port, got, err, c.want, c.err)
		}
	}
}

// TestReadServerList: a missing or oversized file is refused naming
// --servers.
func TestReadServerList(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "none.json"), big} {
		if _, err := ReadServerList(p); err == nil || !strings.HasPrefix(err.Error(), "--servers") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestStartEmbedded: the embedded server answers on loopback until
// stopped.
func TestStartEmbedded(t *testing.T) {
	addr, stop, err := StartEmbedded(context.Background(), "sonde/test (embedded)")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %s", resp.Status)
	}
}
