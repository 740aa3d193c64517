//go:build !linux

package stamp

import (
	"errors"
	"runtime"
	"time"
)

// Elsewhere than Linux stamp runs without the kernel's help: no receive
// timestamps (KernelTimestamps is false), no DS field or TTL reports
// (RecvInfo.TOS and TTL stay -1), the default marking.

func monotonicNs() int64 { return time.Now().UnixNano() }

// LocalErrorEstimate says unsynchronised, with a 1 s error: the clock's
// state is not read here.
func LocalErrorEstimate() ErrorEstimate { return NewErrorEstimate(false, 1) }

func enableReports(int) (tsErr, tosErr error) { return errNoKernelTimestamps, nil }

// errNoKernelTimestamps marks KernelTimestamps false.
var errNoKernelTimestamps = errors.New("stamp: no kernel timestamps on " + runtime.GOOS)

// forceBuffers fails, so SetBuffers falls back to the plain sizes.
func forceBuffers(int, int) (rerr, werr error) { return errNoKernelTimestamps, errNoKernelTimestamps }

// oobSpace: no control messages are asked for.
var oobSpace = 64

func parseOOB([]byte, *RecvInfo) {}

// tosCmsg: per-datagram marking is Linux's; nil keeps the default.
func tosCmsg(bool, int) []byte { return nil }

// threadCPU is not measured outside Linux (no RUSAGE_THREAD): 0.
func threadCPU() time.Duration { return 0 }
