package servertest

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

func pacingSupported() error { return nil }

// setPacing sets SO_MAX_PACING_RATE (bytes/s) on c's socket and reads it
// back, so a kernel that ignored it is caught here, not in a test's figures.
func setPacing(c net.Conn, bytesPerSec uint32) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return fmt.Errorf("%T has no socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var got int
	var serr, gerr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, int(bytesPerSec))
		got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE)
	}); err != nil {
		return err
	}
	if err := errors.Join(serr, gerr); err != nil {
		return fmt.Errorf("SO_MAX_PACING_RATE: %w", err)
	}
	if uint32(got) != bytesPerSec {
		return fmt.Errorf("SO_MAX_PACING_RATE set to %d B/s, reads back %d", bytesPerSec, got)
	}
	return nil
}
