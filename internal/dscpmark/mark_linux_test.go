package dscpmark

import (
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMarkSetsTOS(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := "127.0.0.1:0"
		if network == "tcp6" {
			addr = "[::1]:0"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v (skipped)", network, err)
			continue
		}
		c, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			ln.Close()
			t.Fatal(err)
		}
		if err := Conn(c, 46); err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		rc, _ := c.(syscall.Conn).SyscallConn()
		var tos int
		var gerr error
		_ = rc.Control(func(fd uintptr) {
			if network == "tcp6" {
				tos, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS)
			} else {
				tos, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS)
			}
		})
		c.Close()
		ln.Close()
		if gerr != nil || tos != 46<<2 {
			t.Errorf("%s: TOS = %#x, %v; want %#x", network, tos, gerr, 46<<2)
		}
	}
}
