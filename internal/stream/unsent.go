package stream

import "net"

// LimitUnsent sets c's TCP_NOTSENT_LOWAT to n bytes, as a Sender does for
// its own streams, for servers that write through a connection they do not
// own (HTTP/2 load requests). Best effort: nothing happens where c is not a
// TCP socket or the option is missing.
func LimitUnsent(c net.Conn, n int) {
	if c == nil || n <= 0 {
		return
	}
	if rc := rawConn(c); rc != nil {
		_ = rc.Control(func(fd uintptr) { setNotSentLowat(fd, n) })
	}
}
