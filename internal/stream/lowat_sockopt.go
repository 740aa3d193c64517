//go:build linux || darwin

// TCP_NOTSENT_LOWAT is defined on Linux and macOS only (not on the BSDs,
// although they are unix): the constraint names where the constant is.

package stream

import "golang.org/x/sys/unix"

func setNotSentLowat(fd uintptr, n int) {
	_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, n)
}
