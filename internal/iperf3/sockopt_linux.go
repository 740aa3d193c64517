package iperf3

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setTCPOptions applies the client's -w, -C, -M and -N to a data
// connection the server accepted. iperf3 sets them on its listener before
// the connection exists; sonde's listener is shared by every test, so the
// window is set after the handshake (the window scale is already agreed
// from the system default, which allows any -w up to MaxWindow on Linux
// defaults) and the MSS bounds what the server sends.
func setTCPOptions(c net.Conn, p Checked) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if p.Window > 0 {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, p.Window)
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, p.Window)
		}
		if p.Congestion != "" {
			unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, p.Congestion)
		}
		if p.MSS > 0 {
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, p.MSS)
		}
	})
	if tc, ok := c.(*net.TCPConn); ok {
		// iperf3 sets TCP_NODELAY on its data streams only with -N; Go
		// sets it on every connection. Without Nagle each len-byte block
		// ends in a short segment (131072 bytes is two 65483-byte
		// loopback segments and 106 bytes), which costs the receiver a
		// third more CPU per GB on loopback (bench/iperf3.sh).
		tc.SetNoDelay(p.NoDelay)
	}
}

// setUDPOptions applies -w to a UDP stream.
func setUDPOptions(u *net.UDPConn, p Checked) {
	if p.Window > 0 {
		u.SetReadBuffer(p.Window)
		u.SetWriteBuffer(p.Window)
	}
}

// congestionOf is the congestion control c uses ("" if unknown).
func congestionOf(c net.Conn) string {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return ""
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ""
	}
	var name string
	rc.Control(func(fd uintptr) {
		name, _ = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	})
	return name
}

// cpuTimes is the process's user and system CPU time so far.
func cpuTimes() (user, sys time.Duration) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// reuse lets several UDP sockets bind the server's port: the shared one
// that receives the streams' first datagrams, and one connected socket per
// stream, which the kernel prefers for its client's datagrams (iperf3's
// own server rebinds the port the same way).
func reuse(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// ListenUDP opens the UDP socket of the server's port (the TCP
// listener's port, on its address).
func ListenUDP(addr string) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: reuse}
	pc, err := lc.ListenPacket(context.Background(), "udp", addr)
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

// dialUDP makes a stream's socket: bound to the server's port, connected
// to the client's.
func dialUDP(local, remote *net.UDPAddr) (*net.UDPConn, error) {
	d := net.Dialer{LocalAddr: local, Control: reuse}
	c, err := d.Dial("udp", remote.String())
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}
