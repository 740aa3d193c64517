package udprun

import "golang.org/x/sys/unix"

// The send errors that lose a batch on this host but leave the socket
// usable: a full queue, or an ICMP error of an earlier datagram.
var (
	errNoBufs  error = unix.ENOBUFS
	errAgain   error = unix.EAGAIN
	errRefused error = unix.ECONNREFUSED
)
