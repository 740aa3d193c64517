// Package dscpmark sets the DiffServ code point of sockets' outgoing packets:
// the DSCP goes in the upper six bits of the IPv4 TOS / IPv6 traffic class,
// and the ECN bits are left to the kernel. Names and class lists are
// package dscp, which has no socket code.
package dscpmark

import (
	"errors"
	"fmt"
	"net"

	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// ErrUnsupported is returned where this OS's sockets cannot be marked here.
var ErrUnsupported = errors.New("dscp marking is not supported on this OS")

// Conn sets the DSCP of a TCP connection's outgoing packets.
func Conn(c net.Conn, dscp int) error {
	if dscp < 0 || dscp > 63 {
		return fmt.Errorf("dscp: value %d out of range 0-63", dscp)
	}
	rc, err := tcpinfo.RawConn(c)
	if err != nil {
		return fmt.Errorf("dscp: %w", err)
	}
	v6 := false
	if a, ok := c.LocalAddr().(*net.TCPAddr); ok && a.IP.To4() == nil {
		v6 = true
	}
	return Raw(rc.Control, v6, dscp)
}

// Raw marks a socket given its Control function (from syscall.RawConn or
// a net.Dialer's Control hook).
func Raw(control func(func(fd uintptr)) error, v6 bool, dscp int) error {
	if dscp < 0 || dscp > 63 {
		return fmt.Errorf("dscp: value %d out of range 0-63", dscp)
	}
	var serr error
	err := control(func(fd uintptr) { serr = setTOS(fd, v6, dscp<<2) })
	if err != nil {
		return fmt.Errorf("dscp: control: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("dscp: set %d: %w", dscp, serr)
	}
	return nil
}
