package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/sonde-project/sonde/internal/mbmsink"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/stamp"
)

// mountMBM serves the MBM sink (internal/mbmsink) under the server's
// admission, UDP rate limits and per-test duration and byte limits; its
// runs go to the archive.
func (s *Server) mountMBM() error {
	sink, err := mbmsink.New(mbmsink.Options{
		Addr:     s.cfg.MBMAddr,
		Listen:   func(addr string) (*stamp.Conn, error) { return s.listenUDP(addr, 0) },
		MaxTime:  s.cfg.MaxDuration,
		MaxBytes: s.cfg.MaxBytes,
		Host:     mbmHost{s},
		Started:  func() { s.metrics.tests.WithLabelValues("sonde", "mbm").Inc() },
		Done:     s.RecordMBM,
		Logger:   s.cfg.Logger,
	})
	if err != nil {
		return fmt.Errorf("mbm: %w", err)
	}
	s.mbm = sink
	s.mux.handleFunc("POST "+mbmwire.PathSessions, policyAdmit, sink.HandleOpen)
	s.mux.handleFunc("POST "+mbmwire.PathSessions+"/{id}/end", policySession, sink.HandleEnd)
	return nil
}

// mbmHost is the server's side of the sink: its one admission path and
// its UDP limits.
type mbmHost struct{ s *Server }

func (h mbmHost) Admit(r *http.Request) (func(), error) { return h.s.adm.admit(r, time.Now()) }
func (h mbmHost) Limits() (maxPPS, maxBps float64)      { return h.s.udp.limits() }

func (h mbmHost) Refuse(w http.ResponseWriter, err error) {
	if rej, ok := errors.AsType[*mbmsink.RejectError](err); ok {
		err = &rejection{status: rej.Status, reason: rej.Reason, retryAfter: rej.RetryAfter}
	}
	h.s.reject(w, err)
}

// StartMBM opens the MBM socket now instead of on the first MBM session,
// so that `sonde serve` reports a bind error at start (and, in a test lab,
// in the caller's network namespace). It returns the bound address;
// calling it again returns the same.
func (s *Server) StartMBM() (netip.AddrPort, error) { return s.mbm.Start() }

// MBMListenVia makes the listeners of MBM TCP sessions through via, e.g.
// in a lab's server namespace (netns.Do), as StartMBM makes the MBM
// socket in the caller's.
func (s *Server) MBMListenVia(via func(fn func() error) error) { s.mbm.ListenVia(via) }
