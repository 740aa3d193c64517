package capture

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/capfilter"
)

// Source is an open capture.
type Source struct {
	fd       int
	loopback bool
	buf, oob []byte
	stats    Stats
}

// Open starts capturing on the interface ifname; f (nil: everything)
// selects the packets in the kernel.
func Open(ifname string, f *capfilter.Filter) (*Source, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("capture: no interface %q in this network namespace", ifname)
	}
	// Protocol 0 receives nothing until bind, so the filter is in place
	// before the first packet arrives.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("capture: AF_PACKET socket (needs CAP_NET_RAW): %w", err)
	}
	s := &Source{fd: fd, loopback: ifi.Flags&net.FlagLoopback != 0,
		buf: make([]byte, 256<<10), oob: make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}
	if err := s.setup(ifi.Index, f); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("capture on %s: %w", ifname, err)
	}
	return s, nil
}

func (s *Source) setup(ifindex int, f *capfilter.Filter) error {
	if f != nil {
		raw := f.Program()
		prog := make([]unix.SockFilter, len(raw))
		for i, r := range raw {
			prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
		}
		fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
		if err := unix.SetsockoptSockFprog(s.fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
			return fmt.Errorf("attach filter: %w", err)
		}
	}
	if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fmt.Errorf("SO_TIMESTAMPNS: %w", err)
	}
	// A deep buffer rides out the analyser's pauses; beyond rmem_max only
	// with CAP_NET_ADMIN, so fall back to what is allowed.
	const rcvbuf = 32 << 20
	if unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcvbuf) != nil {
		_ = unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvbuf)
	}
	// Wake up now and then to notice the end of the context.
	tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("SO_RCVTIMEO: %w", err)
	}
	return unix.Bind(s.fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex})
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Next waits for the next packet; it returns ctx's error once ctx is done.
func (s *Source) Next(ctx context.Context, p *Packet) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, oobn, flags, from, err := unix.Recvmsg(s.fd, s.buf, s.oob, unix.MSG_TRUNC)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("capture: %w", err)
		}
		ll, _ := from.(*unix.SockaddrLinklayer)
		out := ll != nil && ll.Pkttype == unix.PACKET_OUTGOING
		if out && s.loopback {
			// On loopback every packet is seen leaving and arriving:
			// keep the arrival, as libpcap does.
			continue
		}
		p.TimeNs = s.timestamp(s.oob[:oobn])
		p.Length = n
		p.Data = s.buf[:min(n, len(s.buf))]
		if flags&unix.MSG_TRUNC == 0 {
			p.Length = len(p.Data)
		}
		p.Outgoing = out
		return nil
	}
}

// timestamp reads SCM_TIMESTAMPNS, or takes the time now if it is missing.
func (s *Source) timestamp(oob []byte) int64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
				ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
				return ts.Nano()
			}
		}
	}
	return time.Now().UnixNano()
}

// Stats returns the kernel's counts so far.
func (s *Source) Stats() (Stats, error) {
	st, err := unix.GetsockoptTpacketStats(s.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return s.stats, fmt.Errorf("capture statistics: %w", err)
	}
	// Reading the counters resets them.
	s.stats.Received += uint64(st.Packets)
	s.stats.Dropped += uint64(st.Drops)
	return s.stats, nil
}

// Close ends the capture.
func (s *Source) Close() error { return unix.Close(s.fd) }
