//go:build linux || darwin

package dscpmark

import "golang.org/x/sys/unix"

// setTOS sets the IPv4 TOS or IPv6 traffic class byte of a socket.
func setTOS(fd uintptr, v6 bool, tos int) error {
	if v6 {
		return unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, tos)
	}
	return unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, tos)
}
