package stamp

import (
	"encoding/binary"
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds stamp's Linux system calls: kernel timestamps and DS
// field reports, forced buffers, the monotonic clock, adjtimex (pacing's
// sleeps are internal/pace's). sys_other.go degrades each elsewhere.

// monotonicNs reads CLOCK_MONOTONIC, the clock of the kernel's timers.
func monotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// LocalErrorEstimate describes this host's clock for the Error Estimate
// field: synchronised (S) when the kernel says so, with its estimated error
// (adjtimex esterror), else unsynchronised with a 1 s error.
func LocalErrorEstimate() ErrorEstimate {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil || state == unix.TIME_ERROR || tx.Status&unix.STA_UNSYNC != 0 {
		return NewErrorEstimate(false, 1)
	}
	return NewErrorEstimate(true, float64(tx.Esterror)*1e-6)
}

// enableReports asks the kernel for a receive timestamp, the DS field and
// the TTL or hop limit of every datagram.
func enableReports(s int) (tsErr, tosErr error) {
	tsErr = unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	// An IPv6 socket also carries IPv4-mapped traffic; ask for both
	// families' reports and keep whichever the kernel accepts.
	e4 := errors.Join(
		unix.SetsockoptInt(s, unix.IPPROTO_IP, unix.IP_RECVTOS, 1),
		unix.SetsockoptInt(s, unix.IPPROTO_IP, unix.IP_RECVTTL, 1))
	e6 := errors.Join(
		unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1),
		unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1))
	if e4 != nil && e6 != nil {
		tosErr = errors.Join(e4, e6)
	}
	return tsErr, tosErr
}

// forceBuffers sets both buffers past rmem_max/wmem_max (CAP_NET_ADMIN).
func forceBuffers(s, bytes int) (rerr, werr error) {
	rerr = unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, bytes)
	werr = unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, bytes)
	return rerr, werr
}

// oobSpace holds a timestamp, a DS field and a TTL control message.
var oobSpace = unix.CmsgSpace(16) + 2*unix.CmsgSpace(4) + 64

func parseOOB(oob []byte, info *RecvInfo) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		h, d := m.Header, m.Data
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(d) >= 16:
			sec := int64(binary.NativeEndian.Uint64(d[0:]))
			nsec := int64(binary.NativeEndian.Uint64(d[8:]))
			info.KernelNs = sec*1e9 + nsec
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && len(d) >= 1:
			info.TOS = int(d[0])
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TTL && len(d) >= 4:
			info.TTL = int(binary.NativeEndian.Uint32(d))
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(d) >= 4:
			info.TOS = int(binary.NativeEndian.Uint32(d)) & 0xff
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_HOPLIMIT && len(d) >= 4:
			info.TTL = int(binary.NativeEndian.Uint32(d))
		}
	}
}

// tosCmsg builds the control message that sets one datagram's DS field:
// IP_TOS for IPv4 destinations (also IPv4-mapped ones on an IPv6 socket,
// which Linux sends through its IPv4 path), IPV6_TCLASS otherwise.
func tosCmsg(dst4 bool, tos int) []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	if dst4 {
		h.Level, h.Type = unix.IPPROTO_IP, unix.IP_TOS
	} else {
		h.Level, h.Type = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	}
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], uint32(tos&0xff))
	return b
}

// threadCPU is the CPU time (user + system) of the calling thread; the
// sender calls it on its locked thread.
func threadCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
