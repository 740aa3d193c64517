package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/mbmwire"
)

// The sink's own tests are internal/mbmsink's; these test its mount: the
// address, StartMBM, and the server's admission around a session.

// mbmServer serves cfg on loopback (start) and returns it with its base
// URL.
func mbmServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	cfg.PerIPPerMinute = -1
	cfg.UDPAddr = "off"
	s, addr := start(t, cfg)
	return s, "http://" + addr
}

// openMBM opens an MBM session on base and returns its ID.
func openMBM(t *testing.T, base string, req mbmwire.SessionRequest) string {
	t.Helper()
	b, _ := json.Marshal(req)
	resp, err := http.Post(base+mbmwire.PathSessions, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep mbmwire.SessionReply
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&rep) != nil {
		t.Fatalf("open: status %d", resp.StatusCode)
	}
	return rep.ID
}

// postMBM posts in to url and returns the status.
func postMBM(t *testing.T, url string, in any) int {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	code, _ := do(t, http.DefaultClient, req)
	return code
}

func mbmRequest(packets int64) mbmwire.SessionRequest {
	return mbmwire.SessionRequest{Client: "test", Test: "8.1.1", RateBps: 10e6, PacketBytes: 200, TargetRTTMs: 10, TargetMTU: 228,
		DurationS: 5, Packets: packets, ReorderPackets: 4, LossTimeoutMs: 50}
}

// TestMBMAdmission: an MBM session takes one of the server's test slots
// and gives it back when it ends; a full server refuses the next with its
// own 429; the UDP rate limit is the server's.
func TestMBMAdmission(t *testing.T) {
	s, base := mbmServer(t, Config{MaxConcurrent: 1, UDPMaxBitrate: 5e6})
	req := mbmRequest(100)
	req.RateBps = 1e6
	id := openMBM(t, base, req)
	if a := s.adm.activeCount(); a != 1 {
		t.Errorf("%d slots held by an open session, want 1", a)
	}
	if code := postMBM(t, base+mbmwire.PathSessions, req); code != http.StatusTooManyRequests {
		t.Errorf("a second session on a full server: %d, want 429", code)
	}
	if code := postMBM(t, base+mbmwire.PathSessions+"/"+id+"/end", mbmwire.EndRequest{Sent: 0}); code != http.StatusOK {
		t.Fatalf("end: %d", code)
	}
	if a := s.adm.activeCount(); a != 0 {
		t.Errorf("%d slots held after the end", a)
	}
	req.RateBps = 1e7
	if code := postMBM(t, base+mbmwire.PathSessions, req); code != http.StatusBadRequest {
		t.Errorf("10 Mbit/s on a 5 Mbit/s server: %d, want 400", code)
	}
}

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
	if code := postMBM(t, base+mbmwire.PathSessions, mbmRequest(100)); code != http.StatusServiceUnavailable {
		t.Fatalf("MBM session with MBMAddr off: status %d, want 503", code)
	}
}
