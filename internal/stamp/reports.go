package stamp

import (
	"fmt"
	"syscall"
)

// EnableReports turns on Conn's receive reports (the kernel's receive
// timestamp, DS field and TTL) on another datagram socket, e.g. an ICMP
// one, so every receive path of sonde reads its times one way: read the
// datagram with its control messages (ReadMsgUDP, ReadMsgIP), ParseReports,
// then Clock.FromKernel. kernelTimestamps is false where the kernel gives
// none (not Linux); the caller then times a datagram when it reads it.
func EnableReports(rc syscall.RawConn) (kernelTimestamps bool, err error) {
	var tsErr error
	if err := rc.Control(func(fd uintptr) { tsErr, _ = enableReports(int(fd)) }); err != nil {
		return false, fmt.Errorf("stamp: socket options: %w", err)
	}
	return tsErr == nil, nil
}

// ParseReports reads the control messages of one datagram (the oob of a
// ReadMsg call on a socket EnableReports set up) into info's KernelNs,
// TOS and TTL; info.TOS and TTL are −1 when not reported.
func ParseReports(oob []byte, info *RecvInfo) {
	info.TOS, info.TTL = -1, -1
	parseOOB(oob, info)
}
