// Package servertest runs a sonde server on a loopback port for the tests of
// other packages, in the manner of net/http/httptest.
package servertest

import (
	"cmp"
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
	// Namespace, if set, is the network namespace (a lab's server side,
	// /run/netns/NAME; Linux only) the server's sockets are made in: the
	// listener, and at once its STAMP reflector and MBM sink unless
	// cfg turns them off, since opened on demand they would be made in
	// the namespace of whatever thread asked.
	Namespace string
	// Host is the address to listen on (default 127.0.0.1), e.g. a lab's
	// server address.
	Host string
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
	return Run(t, cfg, opt).Addr
}

// Server is a server Run started.
type Server struct {
	*server.Server
	Addr string // host:port it listens on
	stop func()
}

// Stop ends the server now and waits until it has; the test's end does
// it otherwise. Calling it again does nothing.
func (s *Server) Stop() { s.stop() }

// Run is Serve returning the server, for a test that stops it mid-test
// or reads its state.
func Run(t testing.TB, cfg server.Config, opt Options) *Server {
	t.Helper()
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	host := cmp.Or(opt.Host, "127.0.0.1")
	var ln net.Listener
	listen := func() (err error) {
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			return err
		}
		if opt.Namespace == "" {
			return nil
		}
		if cfg.UDPAddr != "off" {
			if _, err := srv.StartUDP(); err != nil {
				return err
			}
		}
		if cfg.MBMAddr != "off" {
			if _, err := srv.StartMBM(); err != nil {
				return err
			}
			// MBM TCP sessions listen on demand: in the namespace too.
			srv.MBMListenVia(func(fn func() error) error { return inNamespace(opt.Namespace, fn) })
		}
		return nil
	}
	if opt.Namespace != "" {
		err = inNamespace(opt.Namespace, listen)
	} else {
		err = listen()
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
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
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return &Server{Server: srv, Addr: ln.Addr().String(), stop: stop}
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
