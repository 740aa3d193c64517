package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/rpm"
)

// mountRPM serves the responsiveness test (internal/rpm) under the same
// admission, duration and byte limits as every test.
func (s *Server) mountRPM() error {
	load, err := s.newLoad("rpm")
	if err != nil {
		return fmt.Errorf("rpm: %w", err)
	}
	h, err := rpm.NewHandler(load)
	if err != nil {
		return err
	}
	s.mountLoad(h.Routes())
	return nil
}

// newLoad is the registry of one HTTP-load protocol's tests (RPM,
// LibreSpeed): admitted by s.adm, bounded per test by the session limits,
// counted in the server's metrics.
func (s *Server) newLoad(protocol string) (*httpload.Registry, error) {
	g, err := httpload.New(httpload.Options{
		Protocol: protocol,
		MaxTime:  s.cfg.MaxDuration,
		MaxBytes: s.cfg.MaxBytes,
		MaxFlows: s.cfg.MaxStreams,
		Admit:    s.admitLoad,
		Rejected: s.countRejected,
		Done: func(sum httpload.Summary) {
			s.metrics.tests.WithLabelValues(sum.Protocol, "load").Inc()
			s.metrics.bytes.WithLabelValues("download").Add(float64(sum.Sent))
			s.metrics.bytes.WithLabelValues("upload").Add(float64(sum.Received))
			s.cfg.Logger.Info("load test", "protocol", sum.Protocol, "client", sum.Client,
				"sent", sum.Sent, "received", sum.Received, "flows", sum.Flows, "cut", sum.Cut,
				"seconds", sum.End.Sub(sum.Start).Seconds())
			s.archive.loadTest(sum)
		},
	}, s.payload)
	if err != nil {
		return nil, err
	}
	s.loads = append(s.loads, g)
	return g, nil
}

// admitLoad runs the server's one admission path and hands its refusal
// over in httpload's terms.
func (s *Server) admitLoad(r *http.Request) (func(), error) {
	release, err := s.adm.admit(r, time.Now())
	var rej *rejection
	if errors.As(err, &rej) {
		return nil, &httpload.RejectError{Status: rej.status, Reason: rej.reason, RetryAfter: rej.retryAfter}
	}
	return release, err
}

func (s *Server) countRejected(status int) {
	s.metrics.rejected.WithLabelValues(fmt.Sprint(status)).Inc()
}

// mountLoad mounts an HTTP-load protocol's routes: those that start work
// behind the admission (token first), the others as probes (public, and
// served past the per-IP cap to an address that holds a test).
func (s *Server) mountLoad(routes []httpload.Route) {
	for _, rt := range routes {
		p := policyProbe
		if rt.StartsWork {
			p = policyAdmit
		}
		s.mux.handle(rt.Pattern, p, rt.Handler)
	}
}
