package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/sonde-project/sonde/internal/stamp"
)

// icmpPayload is what an echo request carries: the stream's random token
// (8), the 32-bit sequence number (4) and the send timestamp (8). The
// reply echoes it, so a reply is matched to the probe that carried it,
// not by the 16-bit ICMP sequence number alone.
const icmpPayload = 20

// icmpKind probes with ICMP echo from an unprivileged ping socket
// (SOCK_DGRAM, where net.ipv4.ping_group_range admits the process's
// group) or else a raw socket (root or CAP_NET_RAW). A ping socket gets
// only its own replies; a raw one sees every ICMP message of the host and
// keeps those with its identifier and token.
type icmpKind struct {
	s   *stream
	c   *icmp.PacketConn
	pc  net.PacketConn // c's socket, read with its control messages
	raw bool
	// kernelTS: the socket reports the kernel's receive timestamp
	// (SO_TIMESTAMPNS, as STAMP's sockets do), so a reply is timed when
	// it arrived, not when the reader got to it.
	kernelTS bool
	v6       bool
	dst      netip.AddrPort
	to       net.Addr
	id       uint16
	token    uint64
	done     chan struct{}
}

func newICMP(s *stream) (kind, error) {
	k, err := openICMP(s)
	if err != nil {
		return nil, err
	}
	go k.read()
	return k, nil
}

// openICMP opens the stream's socket; newICMP starts its reader.
func openICMP(s *stream) (*icmpKind, error) {
	ap, err := resolve(context.Background(), s.cfg.Target, 0)
	if err != nil {
		return nil, err
	}
	k := &icmpKind{s: s, v6: !ap.Addr().Is4(), dst: netip.AddrPortFrom(ap.Addr(), 0), done: make(chan struct{})}
	var tb [8]byte
	randRead(tb[:])
	k.token = binary.BigEndian.Uint64(tb[:])
	k.id = uint16(k.token >> 48)
	dgram, rawNet, laddr := "udp4", "ip4:icmp", "0.0.0.0"
	if k.v6 {
		dgram, rawNet, laddr = "udp6", "ip6:ipv6-icmp", "::"
	}
	c, derr := icmp.ListenPacket(dgram, laddr)
	if derr != nil {
		var rerr error
		c, rerr = icmp.ListenPacket(rawNet, laddr)
		if rerr != nil {
			return nil, fmt.Errorf("ICMP needs a ping socket (net.ipv4.ping_group_range) or a raw socket (CAP_NET_RAW): %v; %v", derr, rerr)
		}
		k.raw = true
	}
	k.c = c
	if k.raw {
		k.to = &net.IPAddr{IP: ap.Addr().AsSlice()}
	} else {
		k.to = &net.UDPAddr{IP: ap.Addr().AsSlice()}
	}
	if s.cfg.DSCP != 0 {
		if k.v6 {
			err = c.IPv6PacketConn().SetTrafficClass(s.cfg.DSCP << 2)
		} else {
			err = c.IPv4PacketConn().SetTOS(s.cfg.DSCP << 2)
		}
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("ICMP: set DSCP %d: %w", s.cfg.DSCP, err)
		}
	}
	if k.v6 {
		k.pc = c.IPv6PacketConn().PacketConn
	} else {
		k.pc = c.IPv4PacketConn().PacketConn
	}
	if sc, ok := k.pc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			k.kernelTS, _ = stamp.EnableReports(rc)
		}
	}
	return k, nil
}

func (k *icmpKind) send(s *stream, seq uint32, add func(r record)) error {
	var typ icmp.Type = ipv4.ICMPTypeEcho
	if k.v6 {
		typ = ipv6.ICMPTypeEchoRequest
	}
	var data [icmpPayload]byte
	now := s.p.clock.Now()
	ts := stamp.TimestampFromNs(now)
	binary.BigEndian.PutUint64(data[0:], k.token)
	binary.BigEndian.PutUint32(data[8:], seq)
	binary.BigEndian.PutUint64(data[12:], uint64(ts))
	m := icmp.Message{Type: typ, Body: &icmp.Echo{ID: int(k.id), Seq: int(seq & 0xffff), Data: data[:]}}
	b, err := m.Marshal(nil)
	if err != nil {
		return err
	}
	add(record{session: k.token, wire: uint64(ts), sentNs: now, dst: k.dst})
	_, err = k.c.WriteTo(b, k.to)
	return err
}

func (k *icmpKind) expired(*record) {}

func (k *icmpKind) read() {
	defer close(k.done)
	buf := make([]byte, 1500)
	oob := make([]byte, stamp.OOBLen())
	proto := 1
	if k.v6 {
		proto = 58
	}
	for {
		b, from, recv, err := k.readOne(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		k.handle(b, proto, from, recv)
	}
}

// readOne reads one ICMP message with its receive time: the kernel's
// timestamp where the socket gives one (converted as the STAMP path does,
// recvTime), else the time of the read.
func (k *icmpKind) readOne(buf, oob []byte) (msg []byte, from netip.AddrPort, recv int64, err error) {
	var (
		n, oobn int
		ip      netip.Addr
	)
	switch c := k.pc.(type) {
	case *net.UDPConn: // a ping socket
		var ap netip.AddrPort
		n, oobn, _, ap, err = c.ReadMsgUDPAddrPort(buf, oob)
		ip = ap.Addr()
	case *net.IPConn: // a raw socket: IPv4 ones read the IP header too
		var a *net.IPAddr
		n, oobn, _, a, err = c.ReadMsgIP(buf, oob)
		if a != nil {
			ip, _ = netip.AddrFromSlice(a.IP)
		}
		if err == nil && !k.v6 && n >= 20 && buf[0]>>4 == 4 {
			if h := int(buf[0]&0x0f) * 4; h >= 20 && h <= n {
				copy(buf, buf[h:n])
				n -= h
			}
		}
	default:
		var a net.Addr
		n, a, err = k.c.ReadFrom(buf)
		oobn = 0
		if ua, ok := a.(*net.UDPAddr); ok {
			ip, _ = netip.AddrFromSlice(ua.IP)
		} else if ia, ok := a.(*net.IPAddr); ok {
			ip, _ = netip.AddrFromSlice(ia.IP)
		}
	}
	at := time.Now()
	if err != nil {
		return nil, from, 0, err
	}
	var info stamp.RecvInfo
	stamp.ParseReports(oob[:oobn], &info)
	return buf[:n], netip.AddrPortFrom(ip.Unmap(), 0), recvTime(k.s.p.clock, at, info.KernelNs), nil
}

// handle matches one ICMP message; messages that are not echo replies to
// this stream (a raw socket sees all of them) are ignored, not counted.
func (k *icmpKind) handle(b []byte, proto int, from netip.AddrPort, recv int64) {
	m, err := icmp.ParseMessage(proto, b)
	if err != nil || (m.Type != ipv4.ICMPTypeEchoReply && m.Type != ipv6.ICMPTypeEchoReply) {
		return
	}
	e, ok := m.Body.(*icmp.Echo)
	if !ok || (k.raw && e.ID != int(k.id)) {
		return
	}
	if len(e.Data) < icmpPayload || binary.BigEndian.Uint64(e.Data[0:]) != k.token {
		if !k.raw {
			k.s.unmatched()
		}
		return
	}
	seq := binary.BigEndian.Uint32(e.Data[8:])
	if uint16(seq) != uint16(e.Seq) {
		k.s.unmatched()
		return
	}
	k.s.deliver(seq, k.token, binary.BigEndian.Uint64(e.Data[12:]), from, recv, 0, 0)
}

func (k *icmpKind) close() {
	k.c.Close()
	<-k.done
}
