package httpload

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// LossBased sets c's congestion control to a loss-based one, the first of
// loadCongestion the kernel lets this process set, and returns its name
// ("" if none could be set: not a TCP socket, or not allowed).
func LossBased(c net.Conn) string {
	if c == nil {
		return ""
	}
	rc, err := tcpinfo.RawConn(c)
	if err != nil {
		return ""
	}
	set := ""
	_ = rc.Control(func(fd uintptr) {
		for _, name := range loadCongestion {
			if unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name) == nil {
				set = name
				return
			}
		}
	})
	return set
}
