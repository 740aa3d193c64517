//go:build linux

package tun

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Device is an open TUN device. One goroutine may read while another
// writes; neither ReadPackets nor WritePackets is safe for concurrent use
// with itself.
type Device struct {
	name string
	fd   int
	// rbuf holds one frame as read; seg the segment being cut from it.
	rbuf, seg []byte
	// wbuf holds the frame being written: virtio-net header and packet.
	wbuf []byte
}

// maxFrame is the largest frame a read can return: the virtio-net header
// and an IP packet of at most 64 KiB (the kernel's TSO limit for a TUN
// device).
const maxFrame = vnetHdrLen + 65535

// offloads are what the device accepts from the kernel: packets with a
// partial checksum, and TCP segmentation offload over IPv4 and IPv6,
// with ECN's CWR. UDP segmentation (TUN_F_USO4/6) stays off: the kernel
// segments those datagrams before the device.
const offloads = unix.TUN_F_CSUM | unix.TUN_F_TSO4 | unix.TUN_F_TSO6 | unix.TUN_F_TSO_ECN

// Create opens /dev/net/tun and creates a TUN device with the given name
// (at most 15 bytes) in the current network namespace.
func Create(name string) (*Device, error) {
	if len(name) == 0 || len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("tun: name %q must be 1 to %d bytes", name, unix.IFNAMSIZ-1)
	}
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("tun: open /dev/net/tun: %w (CAP_NET_ADMIN is needed)", err)
		}
		return nil, fmt.Errorf("tun: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: %w", err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI | unix.IFF_VNET_HDR)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("tun: create %s: %w (CAP_NET_ADMIN is needed)", name, err)
		}
		return nil, fmt.Errorf("tun: create %s: %w", name, err)
	}
	if err := unix.IoctlSetInt(fd, unix.TUNSETOFFLOAD, offloads); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("tun: offloads on %s: %w", name, err)
	}
	return &Device{
		name: ifr.Name(),
		fd:   fd,
		rbuf: make([]byte, maxFrame),
		seg:  make([]byte, maxFrame),
		wbuf: make([]byte, maxFrame),
	}, nil
}

// Name returns the device's interface name.
func (d *Device) Name() string { return d.name }

// Fd returns the non-blocking file descriptor, for polling.
func (d *Device) Fd() int { return d.fd }

// ReadPackets reads what the kernel sent through the device in one read,
// and calls emit with each packet it stands for, in order: one packet, or
// the segments of a TCP segmentation offload packet (see the package
// comment). The slice passed to emit is valid only during the call. It
// returns the number of packets; it does not block: with nothing to read
// it returns unix.EAGAIN.
func (d *Device) ReadPackets(emit func(pkt []byte)) (int, error) {
	n, err := unix.Read(d.fd, d.rbuf)
	if err != nil {
		return 0, err
	}
	return segment(d.rbuf[:n], d.seg, emit)
}

// WritePackets writes packets, whose checksums must be complete, in order;
// the kernel receives them on the device as if they came from the wire.
// Consecutive segments of one TCP flow that the receiver's GRO would merge
// go in one write, as one segmentation offload frame (see the package
// comment): the receiving stack then handles them once, as it would after
// a NIC's interrupt moderation and GRO. Before each write it calls
// before(i, n) (if not nil) for the packets pkts[i:i+n] the write carries.
// If a write fails, failed[i] is set for each packet i it carried (failed
// must be as long as pkts), and the first error is returned after the
// remaining packets are written.
func (d *Device) WritePackets(pkts [][]byte, failed []bool, before func(i, n int)) error {
	var first error
	for i := 0; i < len(pkts); {
		n := run(pkts[i:])
		if before != nil {
			before(i, n)
		}
		var err error
		switch {
		case n > 1:
			_, err = unix.Write(d.fd, d.wbuf[:frame(d.wbuf, pkts[i:i+n])])
		case len(pkts[i]) > len(d.wbuf)-vnetHdrLen:
			err = fmt.Errorf("tun: write of %d bytes: larger than an IP packet", len(pkts[i]))
		default:
			// The header stays zero: no offload, nothing left to the kernel.
			clear(d.wbuf[:vnetHdrLen])
			_, err = unix.Write(d.fd, d.wbuf[:vnetHdrLen+copy(d.wbuf[vnetHdrLen:], pkts[i])])
		}
		if err != nil {
			for j := i; j < i+n; j++ {
				failed[j] = true
			}
			if first == nil {
				first = err
			}
		}
		i += n
	}
	return first
}

// Close closes the descriptor, which destroys the device in whatever
// namespace it is.
func (d *Device) Close() error {
	if d.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}
