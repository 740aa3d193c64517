//go:build !linux

package stream

import (
	"errors"
	"syscall"
)

const directSupported = false

func writevDirect(syscall.RawConn, [][]byte) (int, error) {
	return 0, errors.New("stream: direct writes are Linux only")
}

func readDirect(syscall.RawConn, []byte) (int, error) {
	return 0, errors.New("stream: direct reads are Linux only")
}

func segmentSize(syscall.RawConn) int { return 0 }
