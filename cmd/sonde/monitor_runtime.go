package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/sonde-project/sonde/internal/memlimit"
	"github.com/sonde-project/sonde/internal/monitor"
)

// runtimeOpts are the process-level settings of `sonde monitor run`.
type runtimeOpts struct {
	memLimit int64  // debug.SetMemoryLimit; 0: none
	pprof    string // net/http/pprof listener; "": none
}

// apply sets the GC's target and the memory limit and starts the pprof
// listener; stop ends it.
func (ro runtimeOpts) apply(logw io.Writer) (stop func(), err error) {
	if os.Getenv("GOGC") == "" {
		// The daemon's live heap is a few MB: at Go's default (100) the
		// heap grows to twice that between collections (docs/monitor.md,
		// "Memory"). GOGC in the environment still rules.
		debug.SetGCPercent(monitor.GCPercent)
	}
	if ro.memLimit > 0 {
		// A soft limit (GOMEMLIMIT in the environment wins): the GC runs earlier as the runtime's total memory
		// nears it, instead of letting the heap grow to twice the live
		// data between collections (GOGC=100). It bounds the Go runtime
		// only, not what SQLite allocates outside it (bounded by the
		// store's pragmas).
		memlimit.Apply(ro.memLimit)
	}
	if ro.pprof == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", ro.pprof)
	if err != nil {
		return nil, usagef("--debug-pprof: %s", err)
	}
	mux := http.NewServeMux()
	pprofRoutes(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(logw, "monitor: --debug-pprof: %v\n", err)
		}
	}()
	fmt.Fprintf(logw, "monitor: serving pprof on http://%s/debug/pprof/ (debugging only)\n", ln.Addr())
	return func() { _ = srv.Close() }, nil
}
