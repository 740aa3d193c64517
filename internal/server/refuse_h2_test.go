package server

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// TestRefusalSpeaksHTTP2: a TLS connection refused at accept (here by the
// total cap; the per-IP cap's refusals take the same path) that
// negotiated HTTP/2 is refused in HTTP/2 (GOAWAY, ENHANCE_YOUR_CALM, the
// reason as debug data), one that negotiated HTTP/1.1 with the 503; before,
// an HTTP/2 client read the 503's text as a broken frame.
func TestRefusalSpeaksHTTP2(t *testing.T) {
	_, addr := startTLS(t, Config{MaxConns: 1, PerIPPerMinute: -1, UDPAddr: "off", MBMAddr: "off", WebRTCPort: -1})
	hold, err := net.Dial("tcp", addr) // the server's one connection
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	time.Sleep(50 * time.Millisecond)

	_, err = tlsClient("h2").Get("https://" + addr + "/healthz")
	if err == nil || !strings.Contains(err.Error(), "ENHANCE_YOUR_CALM") {
		t.Fatalf("HTTP/2 past the cap: %v; want a GOAWAY with ENHANCE_YOUR_CALM", err)
	}
	// The frames themselves: the server's SETTINGS, then the GOAWAY
	// with no stream processed and the reason as debug data.
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(tc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(tc, tc)
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*http2.SettingsFrame); !ok {
		t.Fatalf("first frame %v, want SETTINGS", f.Header())
	}
	if f, err = fr.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	ga, ok := f.(*http2.GoAwayFrame)
	if !ok || ga.LastStreamID != 0 || ga.ErrCode != http2.ErrCodeEnhanceYourCalm || string(ga.DebugData()) != capReasons[capTotal] {
		t.Fatalf("second frame %v, want GOAWAY 0 ENHANCE_YOUR_CALM %q", f, capReasons[capTotal])
	}

	resp, err := tlsClient("http/1.1").Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), capReasons[capTotal]) {
		t.Fatalf("HTTP/1.1 past the cap: %s %s", resp.Status, body)
	}
}
