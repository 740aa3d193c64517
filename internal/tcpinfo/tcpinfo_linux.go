package tcpinfo

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/model"
)

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
