// Package tcpinfo reads Linux TCP_INFO from sockets (tcpinfo_linux.go; on
// other systems Read and Buffers return ErrOS) and records it as a time
// series. It owns the translation from the kernel's struct tcp_info to
// model.TCPSample; nothing else in sonde calls getsockopt(TCP_INFO).
//
// tcpi_last_data_sent, tcpi_last_data_recv and tcpi_last_ack_recv are
// deliberately not exported: they tick in jiffies (4 ms here) and must never
// be used for RTT (metrics.md §1).
package tcpinfo

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// ErrUnsupported is returned for connections that are not TCP sockets.
var ErrUnsupported = errors.New("tcpinfo: not a TCP socket")

// ErrOS is returned by Read and Buffers on an OS other than Linux, whose
// TCP_INFO this package translates.
var ErrOS = fmt.Errorf("tcpinfo: TCP_INFO is not supported on %s", runtime.GOOS)

// RawConn returns the syscall.RawConn under c, unwrapping TLS.
func RawConn(c net.Conn) (syscall.RawConn, error) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, ErrUnsupported
	}
	return sc.SyscallConn()
}

// Get reads TCP_INFO from a connection.
func Get(c net.Conn, ts float64) (model.TCPSample, error) {
	rc, err := RawConn(c)
	if err != nil {
		return model.TCPSample{}, err
	}
	return Read(rc, ts)
}

// Sampler records TCP_INFO of one connection at a fixed interval until
// stopped. The series is bounded by MaxSamples so a long test cannot grow it
// without limit; once full, every other sample is dropped and the interval
// doubles, keeping the whole span at a coarser resolution.
type Sampler struct {
	rc       syscall.RawConn
	ref      time.Time
	interval time.Duration
	max      int
	stop     chan struct{}
	done     chan struct{}
	series   []model.TCPSample
	err      error
}

// MaxSamples bounds a Sampler's series.
const MaxSamples = 4096

// NewSampler starts sampling c every interval. ref is the time zero of the
// sample timestamps.
func NewSampler(c net.Conn, ref time.Time, interval time.Duration) (*Sampler, error) {
	rc, err := RawConn(c)
	if err != nil {
		return nil, err
	}
	if interval <= 0 {
		return nil, fmt.Errorf("tcpinfo: sampling interval must be positive, got %v", interval)
	}
	s := &Sampler{rc: rc, ref: ref, interval: interval, max: MaxSamples,
		stop: make(chan struct{}), done: make(chan struct{})}
	s.sample()
	go s.run()
	return s, nil
}

func (s *Sampler) sample() bool {
	smp, err := Read(s.rc, time.Since(s.ref).Seconds())
	if err != nil {
		s.err = err
		return false
	}
	s.series = append(s.series, smp)
	if len(s.series) >= s.max {
		s.series = decimate(s.series)
		s.interval *= 2
	}
	return true
}

func decimate(in []model.TCPSample) []model.TCPSample {
	out := in[:0]
	for i := 0; i < len(in); i += 2 {
		out = append(out, in[i])
	}
	return out
}

func (s *Sampler) run() {
	defer close(s.done)
	t := time.NewTimer(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if !s.sample() {
				return
			}
			t.Reset(s.interval)
		}
	}
}

// Stop takes a final sample (if the socket is still open) and returns the
// series. The error is the first read error, if sampling ended early.
func (s *Sampler) Stop() ([]model.TCPSample, error) {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	if s.err == nil {
		s.sample()
	}
	return s.series, s.err
}

// Last returns the latest sample, or false if none was taken. It must only be
// called after Stop; for live readings use Read.
func (s *Sampler) Last() (model.TCPSample, bool) {
	if len(s.series) == 0 {
		return model.TCPSample{}, false
	}
	return s.series[len(s.series)-1], true
}
