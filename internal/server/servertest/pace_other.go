//go:build !linux

package servertest

import (
	"errors"
	"net"
)

func pacingSupported() error {
	return errors.New("servertest: pacing needs Linux (SO_MAX_PACING_RATE)")
}

func setPacing(net.Conn, uint32) error { return pacingSupported() }
