package apiclient_test

// An external test: the server's packages import apiclient (iperf3's
// client), so a test inside apiclient cannot import them.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// A real server's refusals come back as a RefusedError with the server's
// own reason, whether the reason is JSON (a handler's) or plain text (the
// connection cap's, written before any handler runs), and never as
// "not a sonde server" or net/http's internal wording.
func TestRefusalsOfARealServer(t *testing.T) {
	ctx := context.Background()
	req := protocol.SessionRequest{Client: "test", DurationS: 1}

	t.Run("token", func(t *testing.T) {
		addr := servertest.Start(t, server.Config{Token: "s3cret", PerIPPerMinute: -1, WebRTCPort: -1})
		c, err := apiclient.New(addr, "wrong", "test", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.Call(ctx, http.MethodPost, protocol.PathSessions, req, nil)
		var re *apiclient.RefusedError
		if !errors.As(err, &re) || re.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "token") {
			t.Fatalf("wrong token: %v", err)
		}
	})

	t.Run("connection cap", func(t *testing.T) {
		// Past the per-IP cap (1) an address may still open what its
		// admitted work has room for: one connection for the one free test
		// slot. Two idle connections take both.
		addr := servertest.Start(t, server.Config{MaxConnsPerIP: 1, MaxConcurrent: 1, HeaderTimeout: time.Minute,
			PerIPPerMinute: -1, WebRTCPort: -1})
		for range 2 {
			hold, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer hold.Close()
			time.Sleep(50 * time.Millisecond) // let the server count it
		}
		// The refusal races the request write on every try: repeat so that
		// both orders are met.
		for i := range 20 {
			c, err := apiclient.New(addr, "", "test", nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Call(ctx, http.MethodPost, protocol.PathSessions, req, nil)
			c.Close()
			var re *apiclient.RefusedError
			if !errors.As(err, &re) || re.Status != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "too many connections") {
				t.Fatalf("try %d: want the server's refusal with its reason, got %v", i, err)
			}
			for _, bad := range []string{"%!", "readLoopPeekFailLocked", "persistConn", "(<nil>)"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("message shows %q: %v", bad, err)
				}
			}
		}
	})
}
