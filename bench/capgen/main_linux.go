//go:build linux

// Command capgen sends generated TCP traffic as raw Ethernet frames on an
// interface, paced to a packet rate, for bench/capture.sh: many
// connections at once (a handshake, then data segments one way with TCP
// timestamps and the peer's ACKs the other way), sent with sendmmsg on an
// AF_PACKET socket in batches. The frames go to a MAC address that is
// not the peer's, so the receiving host's IP stack drops them after its
// packet sockets have seen them (no RST comes back). Addresses are in
// 198.18.0.0/15. Bounded in count (-n) and time (-t); it prints one JSON
// line: the frames sent, the seconds it took and the rate.
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	batch    = 64
	maxCount = 100_000_000
	hdrLen   = 14 + 20 + 32 // Ethernet, IPv4, TCP with the timestamps option
)

type flow struct {
	c, s       [4]byte
	cport      uint16
	seqC, seqS uint32
	step       int
}

func main() {
	ifname := flag.String("i", "", "interface to send on (required)")
	rate := flag.Float64("rate", 100000, "packets per second (0: as fast as possible)")
	count := flag.Int("n", 100000, "packets to send (at most 100 M)")
	limit := flag.Duration("t", 30*time.Second, "stop after this long whatever was sent")
	flows := flag.Int("flows", 1000, "connections at once (1 to 60000)")
	size := flag.Int("size", 100, "payload bytes of a data segment (0 to 1400)")
	flag.Parse()
	if *ifname == "" || *count < 1 || *count > maxCount || *flows < 1 || *flows > 60000 || *size < 0 || *size > 1400 || *rate < 0 || *limit <= 0 || *limit > time.Hour {
		fmt.Fprintln(os.Stderr, "capgen: need -i IF, 1 <= -n <= 100M, 1 <= -flows <= 60000, 0 <= -size <= 1400, -rate >= 0, 0 < -t <= 1h")
		os.Exit(2)
	}
	if err := run(*ifname, *rate, *count, *limit, *flows, *size); err != nil {
		fmt.Fprintln(os.Stderr, "capgen:", err)
		os.Exit(1)
	}
}

func run(ifname string, rate float64, count int, limit time.Duration, nflows, size int) error {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("AF_PACKET socket: %w", err)
	}
	defer unix.Close(fd)
	// Past the queueing discipline: straight to the driver.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: 0, Ifindex: ifi.Index}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	fs := make([]flow, nflows)
	for i := range fs {
		fs[i] = flow{c: [4]byte{198, 18, byte(16 + i>>8), byte(i)}, s: [4]byte{198, 19, 0, 1}, cport: uint16(10000 + i),
			seqC: uint32(i) * 7919, seqS: uint32(i) * 104729}
	}
	bufs := make([][]byte, batch)
	iov := make([]unix.Iovec, batch)
	msgs := make([]unix.Mmsghdr, batch)
	for i := range bufs {
		bufs[i] = make([]byte, hdrLen+size)
		iov[i].Base = &bufs[i][0]
		msgs[i].Hdr.Iov = &iov[i]
		msgs[i].Hdr.Iovlen = 1
	}
	src := ifi.HardwareAddr
	start := time.Now()
	var sent, errs, fi int
	var ipid uint16
	for sent < count {
		el := time.Since(start)
		if el > limit {
			break
		}
		n := min(batch, count-sent)
		if rate > 0 {
			// Pace: the batch goes when the schedule reaches it. The
			// sender sleeps rather than spins: on a small machine the
			// capture it feeds needs the core.
			due := time.Duration(float64(sent) / rate * 1e9)
			if wait := due - el; wait > 10*time.Microsecond {
				time.Sleep(wait)
			}
		}
		tsval := uint32(time.Since(start)/time.Millisecond) + 1
		for i := range n {
			f := &fs[fi]
			fi = (fi + 1) % len(fs)
			ipid++
			l := f.frame(bufs[i], src, size, tsval, ipid)
			iov[i].SetLen(l)
		}
		k, err := sendmmsg(fd, msgs[:n])
		if err != nil {
			errs++
			if errs > 1000 {
				return fmt.Errorf("sendmmsg: %w (after %d frames)", err, sent)
			}
			time.Sleep(time.Millisecond)
		}
		sent += k
	}
	secs := time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"sent": sent, "seconds": secs, "rate": float64(sent) / secs, "send_errors": errs})
}

func sendmmsg(fd int, msgs []unix.Mmsghdr) (int, error) {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// frame writes the flow's next packet into b and returns its length: SYN,
// SYN-ACK, ACK, then a data segment from the client and the server's ACK
// in turn.
func (f *flow) frame(b []byte, srcMAC net.HardwareAddr, size int, tsval uint32, ipid uint16) int {
	step := f.step
	f.step++
	if f.step == 5 {
		f.step = 3
	}
	fromClient := step != 1 && step != 4
	var flags byte
	payload := 0
	seq, ack := f.seqC, f.seqS
	switch step {
	case 0:
		flags = 0x02 // SYN
	case 1:
		flags, ack = 0x12, f.seqC+1 // SYN-ACK
		seq = f.seqS
	case 2:
		flags, seq, ack = 0x10, f.seqC+1, f.seqS+1
		f.seqC++
		f.seqS++
	case 3:
		flags, payload = 0x18, size // PSH-ACK with data
		f.seqC += uint32(size)
	case 4:
		flags, seq, ack = 0x10, f.seqS, f.seqC
	}
	be := binary.BigEndian
	// Ethernet: to a MAC that is not the peer's.
	copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(b[6:12], srcMAC)
	be.PutUint16(b[12:], 0x0800)
	ip := b[14:]
	src, dst, sport, dport := f.c, f.s, f.cport, uint16(80)
	if !fromClient {
		src, dst, sport, dport = f.s, f.c, 80, f.cport
	}
	tot := 20 + 32 + payload
	ip[0], ip[1] = 0x45, 0
	be.PutUint16(ip[2:], uint16(tot))
	be.PutUint16(ip[4:], ipid)
	be.PutUint16(ip[6:], 0x4000)
	ip[8], ip[9] = 64, 6
	be.PutUint16(ip[10:], 0)
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	be.PutUint16(ip[10:], ^fold(sum(ip[:20], 0)))
	t := ip[20:]
	be.PutUint16(t[0:], sport)
	be.PutUint16(t[2:], dport)
	be.PutUint32(t[4:], seq)
	be.PutUint32(t[8:], ack)
	t[12], t[13] = 8<<4, flags
	be.PutUint16(t[14:], 65535)
	be.PutUint16(t[16:], 0)
	be.PutUint16(t[18:], 0)
	t[20], t[21], t[22], t[23] = 1, 1, 8, 10
	be.PutUint32(t[24:], tsval)
	be.PutUint32(t[28:], tsval-1)
	for i := range payload {
		t[32+i] = byte(i)
	}
	// TCP checksum over the pseudo-header and the segment.
	ph := sum(ip[12:20], 0) + 6 + uint32(32+payload)
	be.PutUint16(t[16:], ^fold(sum(t[:32+payload], ph)))
	return 14 + tot
}

func sum(b []byte, s uint32) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
