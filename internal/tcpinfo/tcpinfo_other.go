//go:build !linux

package tcpinfo

import (
	"net"
	"syscall"

	"github.com/sonde-project/sonde/internal/model"
)

// Read returns ErrOS: only Linux's TCP_INFO is translated.
func Read(syscall.RawConn, float64) (model.TCPSample, error) { return model.TCPSample{}, ErrOS }

// Buffers returns ErrOS: the doubled SO_SNDBUF/SO_RCVBUF it reports are
// Linux's.
func Buffers(net.Conn) (snd, rcv int, err error) { return 0, 0, ErrOS }
