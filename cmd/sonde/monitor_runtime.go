package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"time"
)

// runtimeOpts are the process-level settings of `sonde monitor run`.
type runtimeOpts struct {
	memLimit int64  // debug.SetMemoryLimit; 0: none
	pprof    string // net/http/pprof listener; "": none
}

// apply sets the memory limit and starts the pprof listener; stop ends it.
func (ro runtimeOpts) apply(logw io.Writer) (stop func(), err error) {
	if ro.memLimit > 0 {
		// A soft limit: the GC runs earlier as the runtime's total memory
		// nears it, instead of letting the heap grow to twice the live
		// data between collections (GOGC=100). It bounds the Go runtime
		// only, not what SQLite allocates outside it (bounded by the
		// store's pragmas).
		debug.SetMemoryLimit(ro.memLimit)
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
