package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sonde-project/sonde/internal/ndt7"
)

// mountNDT7 serves the ndt7 protocol under the same limits and metrics as
// sonde's own tests: admission, and per test (one connection) the maximum
// duration, from the upgrade to the hard end, and the maximum bytes.
func (s *Server) mountNDT7() error {
	h, err := ndt7.NewHandler(ndt7.Options{
		MaxTime:  s.cfg.MaxDuration,
		MaxBytes: s.cfg.MaxBytes,
		Admit:    s.admitNDT7,
		Observer: ndt7Observer{s.metrics},
		Done:     s.archive.ndt7Test,
		Logf: func(format string, args ...any) {
			s.cfg.Logger.Info(fmt.Sprintf(format, args...), "protocol", "ndt7")
		},
	})
	if err != nil {
		return fmt.Errorf("ndt7: %w", err)
	}
	// Mounted here, not by h.Register: each route declares its policy.
	s.mux.handleFunc(ndt7.DownloadPath, policyAdmit, h.ServeDownload)
	s.mux.handleFunc(ndt7.UploadPath, policyAdmit, h.ServeUpload)
	return nil
}

// admitNDT7 runs the same admission as sonde's tests and hands ndt7 the
// same answer: 401 for a wrong token, 429 with Retry-After once an IP is
// out of failed token attempts or starts, 429 when the server is full.
func (s *Server) admitNDT7(r *http.Request) (func(), error) {
	release, err := s.adm.admit(r, time.Now())
	var rej *rejection
	if errors.As(err, &rej) {
		return nil, &ndt7.RejectError{Status: rej.status, Reason: rej.reason, RetryAfter: rej.retryAfter}
	}
	return release, err
}

// ndt7Observer feeds ndt7 tests into the server's Prometheus counters.
type ndt7Observer struct{ c *counters }

func (o ndt7Observer) TestStarted(kind ndt7.Kind) {
	o.c.tests.WithLabelValues("ndt7", string(kind)).Inc()
}

func (o ndt7Observer) TestEnded(kind ndt7.Kind, bytes int64, err error) {
	o.c.bytes.WithLabelValues(string(kind)).Add(float64(bytes))
	if err != nil {
		o.c.errors.WithLabelValues("ndt7-" + string(kind)).Inc()
	}
}

func (o ndt7Observer) Rejected(_ ndt7.Kind, status int) {
	o.c.rejected.WithLabelValues(fmt.Sprint(status)).Inc()
}
