package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

// rawRequest sends one request on a new connection from 127.0.0.1 and
// returns the connection (open) and the reply's status, Retry-After and
// error reason.
func rawRequest(t *testing.T, addr, method, path, extra string) (net.Conn, int, string, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: sonde\r\n%sContent-Length: %d\r\n\r\n%s", method, path, extra, len(`{"client":"t"}`)*boolInt(method == "POST"),
		map[bool]string{true: `{"client":"t"}`}[method == "POST"])
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, 0, "", err.Error()
	}
	_ = c.SetDeadline(time.Time{})
	var er protocol.ErrorReply
	var sr protocol.SessionReply
	if resp.StatusCode == http.StatusOK {
		_ = json.NewDecoder(resp.Body).Decode(&sr)
		return c, resp.StatusCode, "", sr.ID
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_ = json.NewDecoder(resp.Body).Decode(&er)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d with Content-Type %q, want the JSON error body", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	return c, resp.StatusCode, resp.Header.Get("Retry-After"), er.Error
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestAdmittedTestsPastPerIPCap: one address holds the per-IP cap with
// idle connections, then starts tests whose streams together are several
// times the cap. Every test starts and every stream opens (each counted
// against its test); another idle connection is still refused, with the
// reason and Retry-After, and a client claiming one test cannot hold more
// connections than the test may open.
func TestAdmittedTestsPastPerIPCap(t *testing.T) {
	const (
		perIP   = 4
		tests   = 5
		streams = 4
	)
	s, addr := start(t, Config{MaxConnsPerIP: perIP, MaxConcurrent: tests, MaxStreams: streams, PerIPPerMinute: -1,
		UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < perIP; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	waitConns(t, s, "127.0.0.1", perIP)

	ids := make([]string, tests)
	for i := range ids {
		c, st, _, id := rawRequest(t, addr, "POST", protocol.PathSessions, "")
		if st != http.StatusOK {
			t.Fatalf("test %d past the per-IP cap: %d %q, want 200", i, st, id)
		}
		c.Close()
		ids[i] = id
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	opened := 0
	for _, id := range ids {
		for k := 0; k < streams; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, st, _, msg := rawRequest(t, addr, "GET", protocol.PathSessions+"/"+id+"/"+protocol.KindProbe,
					"Connection: Upgrade\r\nUpgrade: "+protocol.StreamUpgrade+"\r\n")
				mu.Lock()
				defer mu.Unlock()
				if c != nil {
					held = append(held, c)
				}
				if st == http.StatusSwitchingProtocols {
					opened++
				} else {
					t.Errorf("stream of %s: %d %q, want 101", id, st, msg)
				}
			}()
		}
	}
	wg.Wait()
	if opened != tests*streams {
		t.Fatalf("%d of %d streams opened", opened, tests*streams)
	}
	// The page and other unadmitted requests still meet the cap.
	c, st, ra, msg := rawRequest(t, addr, "GET", "/healthz", "")
	if c != nil {
		c.Close()
	}
	if st != http.StatusServiceUnavailable || ra != "10" || !strings.Contains(msg, "your address") {
		t.Fatalf("unadmitted request past the cap: %d Retry-After %q %q, want 503, 10, the reason", st, ra, msg)
	}
	// Every test's streams are used up and every slot is taken: the address
	// may hold sessionCtlConns more per test on probation, then nothing.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	// The connections closed above (the tests' requests, /healthz) leave
	// the server's count when it sees them close: wait for that, or one
	// still counted takes a place on probation.
	waitConns(t, s, "127.0.0.1", perIP) // the streams count against their tests
	room := tests * sessionCtlConns
	for i := 0; i <= room; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	time.Sleep(300 * time.Millisecond)
	for i, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		br := bufio.NewReader(c)
		_, err := br.Peek(1)
		if got, want := err == nil, i == room; got != want {
			t.Errorf("idle connection %d past the cap: answered %v, want %v (room %d)", i, got, want, room)
		}
		if err != nil {
			continue
		}
		// Refused at accept, before HTTP: the same body as every refusal.
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("refusal at accept: %v", err)
		}
		var er protocol.ErrorReply
		if json.NewDecoder(resp.Body).Decode(&er) != nil || resp.StatusCode != http.StatusServiceUnavailable ||
			resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Retry-After") != "10" ||
			!strings.Contains(er.Error, "your address") {
			t.Errorf("refusal at accept: %d %s Retry-After %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), er.Error)
		}
	}
}
