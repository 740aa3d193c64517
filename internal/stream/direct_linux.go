package stream

import (
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directSupported says whether WriteDirect issues its own system calls
// here (Linux) rather than falling back to the connection's Write.
const directSupported = true

// writevDirect writes all of bufs to the non-blocking socket behind rc
// with writev(2) issued as a raw system call, waiting for room in the
// poller (and honouring the write deadline) as net.Conn.Write does.
//
// Why raw: a write that copies a megabyte into a loopback or 10 Gbit/s
// socket takes a few hundred microseconds. Through the runtime's syscall
// path (entersyscall) that is long enough for sysmon to take the
// goroutine's P away and hand it to another thread, and sysmon itself
// then polls every 20 µs: on a two-core machine the runtime's share of a
// 4-stream sender was ~8 % of its CPU (perf, bench/tcp.sh). A socket in
// non-blocking mode never waits in the kernel (EAGAIN returns at once),
// which is what RawSyscall requires; the P is held only for the copy.
func writevDirect(rc syscall.RawConn, bufs [][]byte) (int, error) {
	var iov [8]unix.Iovec
	total := 0
	var serr error
	err := rc.Write(func(fd uintptr) bool {
		for len(bufs) > 0 {
			n := 0
			for _, b := range bufs {
				if n == len(iov) {
					break
				}
				if len(b) == 0 {
					continue
				}
				iov[n].Base = &b[0]
				iov[n].SetLen(len(b))
				n++
			}
			if n == 0 {
				bufs = nil
				break
			}
			w, _, e := syscall.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
			switch e {
			case 0:
			case syscall.EAGAIN:
				return false // wait for room, then call again
			case syscall.EINTR:
				continue
			default:
				serr = e
				return true
			}
			total += int(w)
			bufs = consume(bufs, int(w))
		}
		return true
	})
	if serr != nil {
		return total, serr
	}
	return total, err
}

// consume drops the first n bytes of bufs.
func consume(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) > 0 {
		bufs[0] = bufs[0][n:]
	}
	return bufs
}

// readDirect reads into b from the non-blocking socket behind rc with
// read(2) issued as a raw system call, waiting in the poller (and
// honouring the read deadline) as net.Conn.Read does: the receiving end of
// writevDirect, for the same reason (a long copy out of the socket would
// otherwise cost the runtime's P hand-offs). 0 bytes read is io.EOF.
func readDirect(rc syscall.RawConn, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var (
		n    int
		serr error
	)
	err := rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				if n = int(r); n == 0 {
					serr = io.EOF
				}
				return true
			case syscall.EAGAIN:
				return false // wait for data, then call again
			case syscall.EINTR:
				continue
			default:
				serr = e
				return true
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return n, serr
}

// segmentSize returns the socket's current maximum segment size
// (TCP_MAXSEG: the MSS in use, after options), or 0 if it cannot be read.
func segmentSize(rc syscall.RawConn) int {
	var seg int
	_ = rc.Control(func(fd uintptr) {
		v, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG)
		if err == nil {
			seg = v
		}
	})
	return seg
}
