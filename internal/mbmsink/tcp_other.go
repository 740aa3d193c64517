//go:build !linux

package mbmsink

import (
	"net"
	"net/netip"
	"syscall"
)

func listenRcvbuf(netip.AddrPort, int) (net.Listener, int, error) { return nil, 0, errTCPUnsupported }
func windowClamp(syscall.RawConn) int                             { return 0 }
