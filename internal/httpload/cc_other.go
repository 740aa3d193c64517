//go:build !linux

package httpload

import "net"

// LossBased does nothing where TCP_CONGESTION is not set this way.
func LossBased(net.Conn) string { return "" }
