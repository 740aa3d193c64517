package server

import (
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/mbmwire"
)

// TestMBMAddr: MBMAddr binds the sink where it says, StartMBM opens it
// once, and "off" refuses MBM sessions with a reason naming the flag.
func TestMBMAddr(t *testing.T) {
	s, _ := mbmServer(t, Config{MBMAddr: "127.0.0.1:0"})
	a, err := s.StartMBM()
	if err != nil {
		t.Fatal(err)
	}
	if !a.Addr().IsLoopback() || a.Port() == 0 {
		t.Fatalf("MBM sink on %v, want 127.0.0.1 and a port", a)
	}
	if b, err := s.StartMBM(); err != nil || b != a {
		t.Fatalf("second StartMBM: %v, %v; want %v again", b, err, a)
	}

	// A taken address fails at StartMBM, not at the first session.
	taken, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	s2, _ := mbmServer(t, Config{MBMAddr: taken.LocalAddr().String()})
	if _, err := s2.StartMBM(); err == nil || !strings.Contains(err.Error(), "MBM socket") {
		t.Fatalf("StartMBM on a taken address: %v, want an MBM socket error", err)
	}

	s3, base := mbmServer(t, Config{MBMAddr: "off"})
	if _, err := s3.StartMBM(); err == nil || !strings.Contains(err.Error(), "--mbm-addr off") {
		t.Fatalf("StartMBM with MBMAddr off: %v", err)
	}
	if code := postJSON(t, base+mbmwire.PathSessions, mbmRequest(100), nil); code != http.StatusServiceUnavailable {
		t.Fatalf("MBM session with MBMAddr off: status %d, want 503", code)
	}
}
