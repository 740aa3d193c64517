package stamp

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Conn is a UDP socket that reports, with every datagram it reads, the
// kernel's receive timestamp (SO_TIMESTAMPNS), the DS field (DSCP and ECN)
// and the TTL or hop limit, and that can set the DS field of every datagram
// it sends.
type Conn struct {
	c         *net.UDPConn
	rc        syscall.RawConn
	connected bool
	// KernelTimestamps is true when SO_TIMESTAMPNS could be enabled.
	KernelTimestamps bool
}

// RecvInfo describes one received datagram.
type RecvInfo struct {
	From netip.AddrPort
	// At is the user-space time of the read; KernelNs the kernel's receive
	// time (CLOCK_REALTIME ns), 0 when not reported.
	At       time.Time
	KernelNs int64
	// TOS is the received DS field (DSCP << 2 | ECN), TTL the IPv4 TTL or
	// IPv6 hop limit; −1 when not reported.
	TOS, TTL int
}

// Listen opens a UDP socket on addr ("host:port", port 0 for any) and
// enables the receive reports.
func Listen(network, addr string) (*Conn, error) {
	ua, err := net.ResolveUDPAddr(network, addr)
	if err != nil {
		return nil, fmt.Errorf("stamp: resolve %s: %w", addr, err)
	}
	c, err := net.ListenUDP(network, ua)
	if err != nil {
		return nil, fmt.Errorf("stamp: listen on %s: %w", addr, err)
	}
	conn, err := NewConn(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return conn, nil
}

// Dial opens a UDP socket connected to raddr, so that an ICMP port
// unreachable from the peer surfaces as a read error (ECONNREFUSED).
func Dial(network, raddr string) (*Conn, error) { return DialFrom(network, 0, raddr) }

// DialFrom is Dial from a given local port (0: any), for flows that
// port-based classifiers should tell apart.
func DialFrom(network string, localPort int, raddr string) (*Conn, error) {
	ua, err := net.ResolveUDPAddr(network, raddr)
	if err != nil {
		return nil, fmt.Errorf("stamp: resolve %s: %w", raddr, err)
	}
	var la *net.UDPAddr
	if localPort > 0 {
		la = &net.UDPAddr{Port: localPort}
	}
	c, err := net.DialUDP(network, la, ua)
	if err != nil {
		return nil, fmt.Errorf("stamp: dial %s: %w", raddr, err)
	}
	conn, err := NewConn(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	conn.connected = true
	return conn, nil
}

// RemoteAddr returns the connected peer (zero if not connected).
func (c *Conn) RemoteAddr() netip.AddrPort {
	if a, ok := c.c.RemoteAddr().(*net.UDPAddr); ok && a != nil {
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

// NewConn takes over c and enables the receive reports.
func NewConn(c *net.UDPConn) (*Conn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("stamp: raw socket: %w", err)
	}
	conn := &Conn{c: c, rc: rc}
	var tsErr, tosErr error
	err = rc.Control(func(fd uintptr) { tsErr, tosErr = enableReports(int(fd)) })
	if err != nil {
		return nil, fmt.Errorf("stamp: socket options: %w", err)
	}
	if tosErr != nil {
		return nil, fmt.Errorf("stamp: enable DS field reports: %w", tosErr)
	}
	conn.KernelTimestamps = tsErr == nil
	return conn, nil
}

// LocalAddr returns the bound address.
func (c *Conn) LocalAddr() netip.AddrPort {
	return c.c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Close closes the socket; a blocked Read returns net.ErrClosed.
func (c *Conn) Close() error { return c.c.Close() }

// SetReadDeadline bounds the next reads.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.c.SetReadDeadline(t) }

// SetBuffers sets the socket's receive and send buffer sizes; bursts at
// high probe rates, or a reflector briefly starved of CPU, need more than
// the default. With CAP_NET_ADMIN the *BUFFORCE options pass rmem_max and
// wmem_max; otherwise the kernel clamps to them.
func (c *Conn) SetBuffers(bytes int) {
	var rerr, werr error
	_ = c.rc.Control(func(fd uintptr) { rerr, werr = forceBuffers(int(fd), bytes) })
	if rerr != nil {
		_ = c.c.SetReadBuffer(bytes)
	}
	if werr != nil {
		_ = c.c.SetWriteBuffer(bytes)
	}
}

// Read reads one datagram into b with its report. oob is scratch space of
// at least OOBLen bytes (reused across calls to avoid allocation).
func (c *Conn) Read(b, oob []byte) (n int, info RecvInfo, err error) {
	n, oobn, _, from, err := c.c.ReadMsgUDPAddrPort(b, oob)
	info.At = time.Now()
	info.TOS, info.TTL = -1, -1
	if err != nil {
		return 0, info, err
	}
	info.From = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	parseOOB(oob[:oobn], &info)
	return n, info, nil
}

// OOBLen is the scratch size Read needs.
func OOBLen() int { return oobSpace }

// WriteTo sends b to dst with the DS field tos (DSCP << 2 | ECN), or the
// socket's default marking when tos < 0.
func (c *Conn) WriteTo(b []byte, dst netip.AddrPort, tos int) error {
	if c.connected {
		dst = c.RemoteAddr()
	}
	var oob []byte
	if tos >= 0 {
		oob = tosCmsg(dst.Addr().Is4() || dst.Addr().Is4In6(), tos)
	}
	if c.connected {
		_, _, err := c.c.WriteMsgUDP(b, oob, nil)
		return err
	}
	_, _, err := c.c.WriteMsgUDPAddrPort(b, oob, c.target(dst))
	return err
}

// target maps an IPv4 destination for an IPv6 socket.
func (c *Conn) target(dst netip.AddrPort) netip.AddrPort {
	if c.isV6() && dst.Addr().Is4() {
		return netip.AddrPortFrom(netip.AddrFrom16(dst.Addr().As16()), dst.Port())
	}
	return dst
}

func (c *Conn) isV6() bool {
	a := c.LocalAddr().Addr()
	return a.Is6() && !a.Is4In6()
}
