// Package tun creates Linux TUN devices (layer 3, IFF_TUN|IFF_NO_PI: every
// read or write is one bare IPv4 or IPv6 packet) and gives raw, non-blocking
// access to their file descriptor for the emulator's forwarding loop, which
// polls them itself rather than through the Go runtime's netpoller so that
// it controls its wake-up precision.
//
// A device lives as long as its file descriptor: it is not persistent, so a
// crashed emulator leaves no device behind. It is created in the calling
// thread's network namespace and may then be moved to another one (ip link
// set DEV netns NS); the descriptor stays valid.
package tun

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Device is an open TUN device.
type Device struct {
	name string
	fd   int
}

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
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("tun: create %s: %w (CAP_NET_ADMIN is needed)", name, err)
		}
		return nil, fmt.Errorf("tun: create %s: %w", name, err)
	}
	return &Device{name: ifr.Name(), fd: fd}, nil
}

// Name returns the device's interface name.
func (d *Device) Name() string { return d.name }

// Fd returns the non-blocking file descriptor, for polling.
func (d *Device) Fd() int { return d.fd }

// Read reads one packet into b. It does not block: with nothing to read it
// returns unix.EAGAIN.
func (d *Device) Read(b []byte) (int, error) {
	n, err := unix.Read(d.fd, b)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Write writes one packet; the kernel receives it on the device as if it
// came from the wire.
func (d *Device) Write(b []byte) (int, error) {
	return unix.Write(d.fd, b)
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
