package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

const token = "secret"

// TestServerLimitsAndSurvival runs one server with a token and a limit of
// one concurrent test through refusals, malformed requests and a busy
// refusal, then checks that it still answers /healthz and runs a normal
// test, and that /metrics counted the refusals.
func TestServerLimitsAndSurvival(t *testing.T) {
	srv := startServer(t, nil, "--addr", "127.0.0.1:0", "--max-concurrent", "1", "--token", token)
	addr := srv.addr()

	t.Run("no token", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", addr, "-t", "1s", "--no-progress")
		wantOneLineError(t, r, "refused", "bearer token", "--token")
	})
	t.Run("wrong token", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", addr, "-t", "1s", "--token", "guess", "--no-progress")
		wantOneLineError(t, r, "refused", "bearer token", "--token")
	})
	t.Run("https to plain server", func(t *testing.T) {
		r := run(t, nil, errTimeout, "test", "https://"+addr, "-t", "1s", "--token", token, "--no-progress")
		wantOneLineError(t, r, "does not speak TLS", "http://")
	})
	t.Run("malformed requests", func(t *testing.T) { abuse(t, addr) })
	t.Run("busy", func(t *testing.T) {
		first := startProc(t, nil, "", "test", addr, "-t", "2s", "--streams", "1", "--token", token, "--no-progress", "-q", "--json", "-")
		waitActive(t, addr, 1, 10*time.Second)
		r := run(t, nil, errTimeout, "test", addr, "-t", "1s", "--token", token, "--no-progress")
		wantOneLineError(t, r, "server busy", "1 of 1 test slots", "try again later")
		select {
		case <-first.done:
		case <-time.After(runTimeout):
			t.Fatal("the running test did not finish")
		}
		if first.err != nil {
			t.Errorf("the test that held the slot failed: %v\nstderr:\n%s", first.err, first.stderr)
		}
	})

	srv.wantAlive(t)
	waitActive(t, addr, 0, 5*time.Second)
	res, _ := runJSON(t, nil, runTimeout, addr, "-t", "1s", "--streams", "1", "--token", token)
	for _, d := range []string{"download", "upload"} {
		r := res.Download
		if d == "upload" {
			r = res.Upload
		}
		if r == nil || !(r.GoodputBps > 0) {
			t.Errorf("%s: no goodput after the bad inputs", d)
		}
	}
	srv.wantAlive(t)

	m := get(t, "http://"+addr+"/metrics")
	if n := metric(m, `sonde_rejected_total{status="401"}`); n < 2 {
		t.Errorf("metrics count %v token refusals, want ≥ 2", n)
	}
	if n := metric(m, `sonde_rejected_total{status="429"}`); n < 1 {
		t.Errorf("metrics count %v busy refusals, want ≥ 1", n)
	}
	if n := metric(m, "sonde_active_tests"); n != 0 {
		t.Errorf("metrics show %v active tests after all ended, want 0", n)
	}
}

// abuse sends the server requests no sonde client sends and checks each is
// refused with a status, not a crash or a hang.
func abuse(t *testing.T, addr string) {
	for _, c := range []struct {
		name, req  string
		wantStatus int
	}{
		{"not HTTP", "\x16\x03\x01\x00\x05hello\r\n\r\n", 400},
		{"bad JSON", post(protocol.PathSessions, "{not json"), 400},
		{"huge body", post(protocol.PathSessions, `{"client":"`+strings.Repeat("x", 100<<10)+`"}`), 413},
		{"unknown session", upgrade(protocol.PathSessions + "/0123/download"), 404},
		{"unknown kind", upgrade(protocol.PathSessions + "/0123/sideways"), 404},
		{"unknown path", "GET /sonde/v9/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rawStatus(t, addr, c.req); got != c.wantStatus {
				t.Errorf("status %d, want %d", got, c.wantStatus)
			}
		})
	}
	t.Run("stream abuse", func(t *testing.T) {
		id := createSession(t, addr)
		defer deleteSession(t, addr, id)
		// No Upgrade header on a stream request.
		plain := fmt.Sprintf("GET %s/%s/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
			protocol.PathSessions, id, token)
		if got := rawStatus(t, addr, plain); got != http.StatusUpgradeRequired {
			t.Errorf("stream without Upgrade: status %d, want 426", got)
		}
		if got := rawStatus(t, addr, upgrade(protocol.PathSessions+"/"+id+"/upload?dscp=99")); got != 400 {
			t.Errorf("stream with DSCP 99: status %d, want 400", got)
		}
		if got := rawStatus(t, addr, upgrade(protocol.PathSessions+"/"+id+"/upload?tag=%3Cscript%3E")); got != 400 {
			t.Errorf("stream with a bad tag: status %d, want 400", got)
		}
		// A malformed frame on an upload stream: the server must drop
		// the stream.
		c, br := openRawStream(t, addr, id, "upload")
		_, _ = c.Write([]byte{9, 0, 0, 0, 0, 0, 0, 4, 1, 2, 3, 4})
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, br); err != nil {
			t.Errorf("upload stream with a malformed frame: %v, want the server to close it", err)
		}
		c.Close()
		// A download stream the client resets at once.
		c, _ = openRawStream(t, addr, id, "download")
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		// A frame header cut short, then silence and close.
		c, _ = openRawStream(t, addr, id, "probe")
		_, _ = c.Write([]byte{2, 0, 0})
		c.Close()
	})
	t.Run("half request", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(c, "POST "+protocol.PathSessions+" HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
		c.Close()
	})
}

func post(path, body string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		path, token, len(body), body)
}

func upgrade(path string) string {
	return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n\r\n",
		path, token, protocol.StreamUpgrade)
}

// rawStatus sends req on a new connection and returns the reply's status.
func rawStatus(t *testing.T, addr, req string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no HTTP reply: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// openRawStream upgrades a stream of a session by hand.
func openRawStream(t *testing.T, addr, id, kind string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, upgrade(protocol.PathSessions+"/"+id+"/"+kind)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade %s stream: %v %v", kind, resp, err)
	}
	return c, br
}

func createSession(t *testing.T, addr string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+protocol.PathSessions, strings.NewReader(`{"client":"integration","duration_s":1}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep protocol.SessionReply
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || resp.StatusCode != 200 || rep.ID == "" {
		t.Fatalf("create session: %s, %v", resp.Status, err)
	}
	return rep.ID
}

func deleteSession(t *testing.T, addr, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+addr+protocol.PathSessions+"/"+id, nil)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("delete session: %s", resp.Status)
	}
}

// waitActive polls /healthz until it reports n active tests.
func waitActive(t *testing.T, addr string, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var h struct {
			Status string `json:"status"`
			Active int    `json:"active_tests"`
			Token  bool   `json:"token_required"`
		}
		if err := json.Unmarshal([]byte(get(t, "http://"+addr+"/healthz")), &h); err != nil {
			t.Fatalf("/healthz: %v", err)
		}
		if h.Status != "ok" || !h.Token {
			t.Fatalf("/healthz: status %q token_required %v, want ok and true", h.Status, h.Token)
		}
		if h.Active == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz shows %d active tests after %v, want %d", h.Active, timeout, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// metric returns the value of a Prometheus sample line "name value", or -1.
func metric(text, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}
