package apiclient

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// upgradeWith runs Upgrade against a peer that reads the request and
// answers reply; it returns the request the peer read, the first byte
// after the 101 (-1 for none) and Upgrade's error.
func upgradeWith(t testing.TB, reply string) (*http.Request, int, error) {
	c := &Client{Base: &url.URL{Scheme: "http", Host: "sonde.test:8080"}, Software: "sonde-test"}
	client, server := net.Pipe()
	got := make(chan *http.Request, 1)
	go func() {
		defer server.Close()
		_ = server.SetDeadline(time.Now().Add(5 * time.Second))
		r, err := http.ReadRequest(bufio.NewReader(server))
		got <- r
		if err == nil {
			_, _ = io.WriteString(server, reply)
		}
	}()
	br, err := c.Upgrade(client, "upload", "/api/v1/sessions/x/upload?tag=t")
	next := -1
	if err == nil {
		if br.Buffered() > 0 {
			b, _ := br.ReadByte()
			next = int(b)
		}
		client.Close()
	}
	return <-got, next, err
}

func TestUpgrade(t *testing.T) {
	req, next, err := upgradeWith(t, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: sonde-stream/1\r\nConnection: Upgrade\r\n\r\nX")
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "/api/v1/sessions/x/upload?tag=t" || req.Host != "sonde.test:8080" ||
		req.Header.Get("Upgrade") != "sonde-stream/1" || req.UserAgent() != "sonde-test" {
		t.Errorf("request %s %s host %q upgrade %q agent %q", req.Method, req.URL, req.Host, req.Header.Get("Upgrade"), req.UserAgent())
	}
	if next != 'X' {
		t.Errorf("byte after the 101: %d, want 'X' (read ahead must stay in the reader)", next)
	}

	for _, tc := range []struct{ reply, want string }{
		{"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{\"error\":\"session over\"}", "open upload stream: server refused the test: session over"},
		{"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "open upload stream: not a sonde server"},
		{"SSH-2.0-OpenSSH_9.2\r\n", "open upload stream: sonde.test:8080 did not answer like a sonde server"},
	} {
		_, _, err := upgradeWith(t, tc.reply)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("reply %q: error %v, want one line starting %q", tc.reply, err, tc.want)
		}
	}
}

// FuzzUpgrade: any reply to the upgrade request gives a stream or an
// error, never a panic or a hang. (A sonde server's JSON reason is passed
// through as it is, so the error is one line only if the reason is.)
func FuzzUpgrade(f *testing.F) {
	f.Add("HTTP/1.1 101 Switching Protocols\r\nUpgrade: sonde-stream/1\r\n\r\nX")
	f.Add("HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"error\":\"no\"}")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, reply string) {
		if len(reply) > 8<<10 {
			return
		}
		_, _, _ = upgradeWith(t, reply)
	})
}
