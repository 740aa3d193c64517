package server

import (
	"math"

	"golang.org/x/sys/unix"
)

// fdLimit returns the process's file descriptor limit (RLIMIT_NOFILE, the
// soft one, which the Go runtime raises to the hard one at start).
func fdLimit() (int, bool) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return int(min(r.Cur, math.MaxInt32)), true
}
