// Package memlimit owns the process's soft memory limit (the Go runtime's
// debug.SetMemoryLimit) as `sonde serve` and `sonde monitor run` take it
// from --memory-limit: one syntax (a size, or off), a floor each command
// names, and GOMEMLIMIT in the environment winning over the flag.
//
// The limit acts on the whole process, so only the CLI applies it, once,
// before the work starts; no library type changes it.
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"

	"github.com/sonde-project/sonde/internal/units"
)

// Parse reads --memory-limit: a size of at least floor bytes, or off (0).
// A limit near the live heap would keep the collector running back to
// back, hence the floor.
func Parse(spec string, floor int64) (int64, error) {
	lim, err := units.ParseBytesLimit(spec)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit: %w", err)
	}
	if lim != 0 && lim < floor {
		return 0, fmt.Errorf("--memory-limit %s: at least %d MiB, or off", spec, floor>>20)
	}
	return lim, nil
}

// Apply sets the soft limit to lim bytes (0: none). GOMEMLIMIT in the
// environment wins: the runtime applied it at start, and an operator who
// set it meant it.
func Apply(lim int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if lim == 0 {
		lim = math.MaxInt64 // the runtime's "none"
	}
	debug.SetMemoryLimit(lim)
}
