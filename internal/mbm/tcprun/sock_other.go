//go:build !linux

package tcprun

import (
	"fmt"
	"runtime"
	"syscall"
)

var errOS = fmt.Errorf("tcprun: the TCP tests need Linux (SO_MAX_PACING_RATE, TCP_INFO), not %s", runtime.GOOS)

func setPacing(syscall.RawConn, uint32) (uint32, error)     { return 0, errOS }
func setCongestion(syscall.RawConn, string) (string, error) { return "", errOS }
func setNotsentLowat(syscall.RawConn, int) error            { return errOS }
func setMaxSeg(syscall.RawConn, int) error                  { return errOS }
