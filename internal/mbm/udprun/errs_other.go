//go:build !linux

package udprun

import "syscall"

var (
	errNoBufs  error = syscall.ENOBUFS
	errAgain   error = syscall.EAGAIN
	errRefused error = syscall.ECONNREFUSED
)
