// Package tcpinfo reads Linux TCP_INFO from sockets and records it as a time
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
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/model"
)

// ErrUnsupported is returned for connections that are not TCP sockets.
var ErrUnsupported = errors.New("tcpinfo: not a TCP socket")

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

// Read takes one TCP_INFO reading from rc. ts is stored in the sample as
// seconds since the caller's reference time.
func Read(rc syscall.RawConn, ts float64) (model.TCPSample, error) {
	var (
		info *unix.TCPInfo
		gerr error
	)
	err := rc.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	})
	if err != nil {
		return model.TCPSample{}, fmt.Errorf("tcpinfo: control: %w", err)
	}
	if gerr != nil {
		return model.TCPSample{}, fmt.Errorf("tcpinfo: getsockopt TCP_INFO: %w", gerr)
	}
	return fromKernel(info, ts), nil
}

// Get reads TCP_INFO from a connection.
func Get(c net.Conn, ts float64) (model.TCPSample, error) {
	rc, err := RawConn(c)
	if err != nil {
		return model.TCPSample{}, err
	}
	return Read(rc, ts)
}

func fromKernel(i *unix.TCPInfo, ts float64) model.TCPSample {
	return model.TCPSample{
		TS:              ts,
		State:           i.State,
		CAState:         i.Ca_state,
		RTTUs:           i.Rtt,
		RTTVarUs:        i.Rttvar,
		MinRTTUs:        i.Min_rtt,
		SndCwnd:         i.Snd_cwnd,
		SndSsthresh:     i.Snd_ssthresh,
		SndMSS:          i.Snd_mss,
		RcvMSS:          i.Rcv_mss,
		AdvMSS:          i.Advmss,
		PMTU:            i.Pmtu,
		SndWnd:          i.Snd_wnd,
		RcvSpace:        i.Rcv_space,
		RcvWnd:          i.Rcv_wnd,
		Unacked:         i.Unacked,
		TotalRetrans:    i.Total_retrans,
		BytesSent:       i.Bytes_sent,
		BytesRetrans:    i.Bytes_retrans,
		BytesAcked:      i.Bytes_acked,
		BytesReceived:   i.Bytes_received,
		DeliveryRateBps: float64(i.Delivery_rate) * 8, // kernel gives bytes/s
		BusyTimeUs:      i.Busy_time,
		RwndLimitedUs:   i.Rwnd_limited,
		SndbufLimitedUs: i.Sndbuf_limited,
		Delivered:       i.Delivered,
		DeliveredCE:     i.Delivered_ce,
		ReordSeen:       i.Reord_seen,
		DsackDups:       i.Dsack_dups,
		RcvOOOPack:      i.Rcv_ooopack,
		RcvRTTUs:        i.Rcv_rtt,
		NotsentBytes:    i.Notsent_bytes,
		Lost:            i.Lost,
		Retrans:         i.Retrans,
	}
}

// Buffers returns SO_SNDBUF and SO_RCVBUF of the socket (the kernel's doubled
// values, i.e. what the socket may really hold including overhead).
func Buffers(c net.Conn) (snd, rcv int, err error) {
	rc, err := RawConn(c)
	if err != nil {
		return 0, 0, err
	}
	var serr, rerr error
	cerr := rc.Control(func(fd uintptr) {
		snd, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		rcv, rerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	if cerr != nil {
		return 0, 0, fmt.Errorf("tcpinfo: control: %w", cerr)
	}
	if serr != nil {
		return 0, 0, fmt.Errorf("tcpinfo: SO_SNDBUF: %w", serr)
	}
	if rerr != nil {
		return 0, 0, fmt.Errorf("tcpinfo: SO_RCVBUF: %w", rerr)
	}
	return snd, rcv, nil
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
