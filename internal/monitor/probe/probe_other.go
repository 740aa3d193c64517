//go:build !linux

package probe

import (
	"fmt"
	"runtime"
)

// ICMP and TCP-connect probes use Linux sockets (ping sockets, epoll);
// elsewhere only STAMP probes run, and these kinds say so.

type tcpPoller struct{}

func (*tcpPoller) closeAll() {}

func newICMP(*stream) (kind, error) {
	return nil, fmt.Errorf("ICMP probes are not supported on %s", runtime.GOOS)
}

func newTCPPoller(*Prober) (*tcpPoller, error) {
	return nil, fmt.Errorf("TCP connect probes are not supported on %s", runtime.GOOS)
}

func newTCP(*stream) (kind, error) {
	return nil, fmt.Errorf("TCP connect probes are not supported on %s", runtime.GOOS)
}
