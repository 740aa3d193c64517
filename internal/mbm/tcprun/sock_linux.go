package tcprun

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// setPacing sets SO_MAX_PACING_RATE (bytes/s of payload: the kernel paces
// payload, mbm-notes.md fact 1) and returns what reads back, so a kernel
// that ignored it is caught before a test measures an unpaced flow. Since
// Linux 4.13 TCP paces itself when this is set, without the fq qdisc.
func setPacing(rc syscall.RawConn, bytesPerSec uint32) (uint32, error) {
	var got int
	var serr, gerr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(bytesPerSec))
		got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE)
	}); err != nil {
		return 0, fmt.Errorf("SO_MAX_PACING_RATE: %w", err)
	}
	if err := errors.Join(serr, gerr); err != nil {
		return 0, fmt.Errorf("SO_MAX_PACING_RATE: %w", err)
	}
	return uint32(got), nil
}

// setCongestion sets TCP_CONGESTION ("" keeps the system's) and returns
// the one the socket uses.
func setCongestion(rc syscall.RawConn, name string) (string, error) {
	var got string
	var serr, gerr error
	if err := rc.Control(func(fd uintptr) {
		if name != "" {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
		}
		got, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", fmt.Errorf("TCP_CONGESTION: %w", err)
	}
	if serr != nil {
		return "", fmt.Errorf("congestion control %q: %w (see /proc/sys/net/ipv4/tcp_available_congestion_control)", name, serr)
	}
	if gerr != nil {
		return "", fmt.Errorf("TCP_CONGESTION: %w", gerr)
	}
	return got, nil
}

// setNotsentLowat bounds the data the socket holds beyond what is in
// flight (TCP_NOTSENT_LOWAT): enough to ride out a host stall, little
// enough that a test stops soon after its decision.
func setNotsentLowat(rc syscall.RawConn, n int) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
	}); err != nil {
		return fmt.Errorf("TCP_NOTSENT_LOWAT: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("TCP_NOTSENT_LOWAT: %w", serr)
	}
	return nil
}

// setMaxSeg sets TCP_MAXSEG (before connect: it clamps the MSS both ends
// use).
func setMaxSeg(rc syscall.RawConn, mss int) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss)
	}); err != nil {
		return fmt.Errorf("TCP_MAXSEG: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("TCP_MAXSEG %d: %w", mss, serr)
	}
	return nil
}
