package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/iperf3"
	"github.com/sonde-project/sonde/internal/model"
)

// iperf3Service is the iperf3 server's listeners, once started.
type iperf3Service struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	addr   net.Addr
}

// StartIperf3 answers iperf3 clients on Config.Iperf3Addr (TCP, and UDP
// on the same port where the OS allows it) under the server's admission
// and limits, and returns the TCP address. Calling it again returns the
// same address.
func (s *Server) StartIperf3() (net.Addr, error) {
	m := &s.iperf3
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.addr != nil {
		return m.addr, nil
	}
	if s.cfg.Iperf3Addr == "" || s.cfg.Iperf3Addr == "off" {
		return nil, errors.New("iperf3: no address configured")
	}
	ln, err := net.Listen("tcp", s.cfg.Iperf3Addr)
	if err != nil {
		return nil, err
	}
	pc, err := iperf3.ListenUDP(ln.Addr().String())
	if err != nil {
		s.cfg.Logger.Warn("iperf3: UDP tests not served", "err", err)
		pc = nil
	}
	srv := iperf3.NewServer(iperf3.Options{
		Admit:       s.admitIperf3,
		MaxDuration: s.cfg.MaxDuration,
		MaxBytes:    s.cfg.MaxBytes,
		Done:        s.archive.iperf3Test,
		Logf: func(format string, args ...any) {
			s.cfg.Logger.Info(fmt.Sprintf(format, args...), "protocol", "iperf3")
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done, m.addr = cancel, make(chan struct{}), ln.Addr()
	go func() {
		defer close(m.done)
		if err := srv.Serve(ctx, ln, pc); err != nil {
			s.cfg.Logger.Warn("iperf3 server stopped", "err", err)
		}
	}()
	return m.addr, nil
}

func (m *iperf3Service) close() {
	m.mu.Lock()
	cancel, done := m.cancel, m.done
	m.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// admitIperf3 runs an iperf3 test through the server's one admission:
// the same slots, per-IP start rate and limits as every test. iperf3 has
// no token in its protocol, so a server with a token refuses iperf3
// clients unless Iperf3Open says they may run without one.
func (s *Server) admitIperf3(remote net.Addr) (func(), error) {
	if s.cfg.Token != "" && !s.cfg.Iperf3Open {
		s.metrics.rejected.WithLabelValues(fmt.Sprint(http.StatusUnauthorized)).Inc()
		return nil, errors.New("this server needs a token, which iperf3 cannot send (serve with --iperf3-open to admit iperf3 clients)")
	}
	// The admission reads an HTTP request: this one carries the client's
	// address and, on an open server, the token the operator waived.
	r := &http.Request{RemoteAddr: remote.String(), Header: http.Header{}, URL: &url.URL{}}
	if s.cfg.Token != "" {
		r.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	}
	release, err := s.adm.admit(r, time.Now())
	if err != nil {
		var rej *rejection
		if errors.As(err, &rej) {
			s.metrics.rejected.WithLabelValues(fmt.Sprint(rej.status)).Inc()
		}
		return nil, err
	}
	s.metrics.tests.WithLabelValues("iperf3", "test").Inc()
	return release, nil
}

// iperf3Test records an iperf3 test that has ended, from the server's
// side: its streams as sonde's own sessions' (TCP_INFO of the streams it
// sent on, receive counts of those it received on).
func (a *archive) iperf3Test(t *iperf3.Test) {
	a.save(model.KindIperf3, func() *model.ServerRecord {
		rec := assemble.ServerSession(t.Flows)
		rec.Start, rec.End = t.Start.UTC(), t.End.UTC()
		host, _, _ := net.SplitHostPort(t.Client.String())
		rec.Client = model.Endpoint{Address: host, Software: clip("iperf3/" + t.Version)}
		rec.Notes = append(rec.Notes, iperf3.Describe(t))
		switch {
		case t.Ended == "":
			rec.Ended = "test ended by the client"
		case t.Err != nil:
			rec.Ended = "test failed"
			rec.Errors = append(rec.Errors, t.Ended)
		default:
			rec.Ended = "test ended at the server's limit: " + t.Ended
		}
		return rec
	})
}
