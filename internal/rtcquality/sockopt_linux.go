package rtcquality

import (
	"net"

	"golang.org/x/sys/unix"
)

// forceBuffers sets n-byte buffers past rmem_max/wmem_max, which needs
// CAP_NET_ADMIN; without it the calls fail and the buffers stay as set.
func forceBuffers(conn *net.UDPConn, n int) {
	if rc, err := conn.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, n)
		})
	}
}
