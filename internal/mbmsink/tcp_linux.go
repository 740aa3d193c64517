package mbmsink

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenRcvbuf listens on addr with SO_RCVBUF set to rcvbuf before
// listen(), so that every connection it accepts has its window bounded
// from the handshake on, and returns SO_RCVBUF as the kernel holds it
// (doubled). Where net.core.rmem_max caps the value, SO_RCVBUFFORCE
// (CAP_NET_ADMIN) is tried.
func listenRcvbuf(addr netip.AddrPort, rcvbuf int) (net.Listener, int, error) {
	var held int
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf); serr != nil {
				return
			}
			if held, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF); serr != nil || held >= 2*rcvbuf {
				return
			}
			if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) == nil {
				held, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
			}
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("SO_RCVBUF %d: %w", rcvbuf, serr)
		}
		return nil
	}}
	ln, err := lc.Listen(context.Background(), "tcp", addr.String())
	if err != nil {
		return nil, 0, fmt.Errorf("listen: %w", err)
	}
	return ln, held, nil
}

// windowClamp reads TCP_WINDOW_CLAMP back (0 if it cannot).
func windowClamp(rc syscall.RawConn) int {
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP)
	}); err != nil || gerr != nil {
		return 0
	}
	return v
}
