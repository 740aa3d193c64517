//go:build !linux

package rtcquality

import "net"

// forceBuffers does nothing: SO_RCVBUFFORCE is Linux's; the plain
// SetReadBuffer/SetWriteBuffer sizes apply.
func forceBuffers(*net.UDPConn, int) {}
