// Package servertest runs a sonde server on a loopback port for the tests of
// other packages, in the manner of net/http/httptest.
package servertest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/sonde-project/sonde/internal/server"
)

// Options change how Serve listens. The zero value is a plain loopback
// listener.
type Options struct {
	// PaceBps, if positive, caps every accepted connection's send rate at
	// this many bit/s (SO_MAX_PACING_RATE, Linux only; TCP paces itself
	// without the fq qdisc since Linux 4.13). A test uses it to keep a
	// client that queues without bound (Firefox's WebSocket) from being
	// flooded by a multi-Gbit/s loopback download.
	PaceBps float64
}

// Start serves cfg (with its Addr ignored) on 127.0.0.1 and an ephemeral
// port until the test ends, and returns the address as host:port.
func Start(t testing.TB, cfg server.Config) string {
	t.Helper()
	return Serve(t, cfg, Options{})
}

// Serve is Start with options. A connection whose pacing cannot be set
// fails the test and is closed, so no test measures an unpaced stream by
// mistake.
func Serve(t testing.TB, cfg server.Config, opt Options) string {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opt.PaceBps > 0 {
		pl, err := Paced(ln, opt.PaceBps, func(err error) { t.Error(err) })
		if err != nil {
			ln.Close()
			t.Fatal(err)
		}
		ln = pl
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

// maxPaceBps is the most SO_MAX_PACING_RATE takes as a 32-bit value in
// bytes/s (older kernels take no 64-bit value); above it, pacing is not
// worth asking for anyway.
const maxPaceBps = float64(^uint32(0)-1) * 8

// Paced wraps ln so that every connection it accepts sends at most bps
// bit/s. A connection whose pacing cannot be set is closed and reported to
// onErr (once per listener), and Accept goes on with the next one; the
// accepted connection itself is returned unwrapped, so callers that need
// its socket (TCP_INFO, buffer sizes) still get a *net.TCPConn.
func Paced(ln net.Listener, bps float64, onErr func(error)) (net.Listener, error) {
	if !(bps >= 8) || bps > maxPaceBps {
		return nil, fmt.Errorf("pacing rate %g bit/s out of range [8, %g]", bps, maxPaceBps)
	}
	if err := pacingSupported(); err != nil {
		return nil, err
	}
	return &pacedListener{Listener: ln, bytesPerSec: uint32(bps / 8), onErr: onErr}, nil
}

type pacedListener struct {
	net.Listener
	bytesPerSec uint32
	onErr       func(error)
	once        sync.Once
}

func (l *pacedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if err := setPacing(c, l.bytesPerSec); err != nil {
			c.Close()
			if l.onErr != nil {
				l.once.Do(func() { l.onErr(fmt.Errorf("servertest: pace %s: %w", c.RemoteAddr(), err)) })
			}
			continue
		}
		return c, nil
	}
}
