//go:build !linux

package iperf3

import (
	"errors"
	"net"
	"syscall"
	"time"
)

func setTCPOptions(c net.Conn, p Checked) {}

func setUDPOptions(u *net.UDPConn, p Checked) {
	if p.Window > 0 {
		u.SetReadBuffer(p.Window)
		u.SetWriteBuffer(p.Window)
	}
}

func congestionOf(net.Conn) string { return "" }

func cpuTimes() (user, sys time.Duration) { return 0, 0 }

func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

var errUDP = errors.New("iperf3: UDP tests are served on Linux only")

// ListenUDP is Linux only: the streams' sockets share the port.
func ListenUDP(string) (*net.UDPConn, error) { return nil, errUDP }

func dialUDP(_, _ *net.UDPAddr) (*net.UDPConn, error) { return nil, errUDP }
