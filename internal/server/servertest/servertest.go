// Package servertest runs a sonde server on a loopback port for the tests of
// other packages, in the manner of net/http/httptest.
package servertest

import (
	"context"
	"net"
	"testing"

	"github.com/sonde-project/sonde/internal/server"
)

// Start serves cfg (with its Addr ignored) on 127.0.0.1 and an ephemeral
// port until the test ends, and returns the address as host:port.
func Start(t testing.TB, cfg server.Config) string {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, []net.Listener{ln}, nil)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}
