package server

import "github.com/sonde-project/sonde/internal/memlimit"

// DefaultMemoryLimit is `sonde serve --memory-limit`'s default: the Go
// runtime's soft memory limit (debug.SetMemoryLimit).
//
// Why a limit at all: with GOGC's default the heap grows to twice the live
// data before the collector runs. A busy server's live data is mostly what
// its clients have in flight (HTTP/2 upload windows, TLS records, TCP_INFO
// series): 100 mixed clients (bench/mixed_clients.sh) peak at 50–70 MB
// live, so without a limit the heap reaches 130 MB and the process's
// resident memory ~190 MB. Near the limit the collector runs earlier
// instead (its CPU capped by the runtime at half the process's), which
// holds that bench under 150 MB resident (the binary's mapped pages, about
// 27 MB, come on top of the limit) while a server of the default
// --max-concurrent (8 tests, ~15 MB live) never reaches it.
const DefaultMemoryLimit = "100MiB"

// MinMemoryLimit is the lowest --memory-limit taken: an idle server's Go
// memory is about 20 MiB, and a limit near it would keep the collector
// running back to back.
const MinMemoryLimit = 32 << 20

// ApplyMemoryLimit sets the process's soft memory limit from spec
// (--memory-limit: a size of at least MinMemoryLimit, or off for none;
// memlimit.Apply: GOMEMLIMIT in the environment wins). Only the CLI calls
// it, once, before the server starts; a Server never changes it.
func ApplyMemoryLimit(spec string) error {
	lim, err := memlimit.Parse(spec, MinMemoryLimit)
	if err != nil {
		return err
	}
	memlimit.Apply(lim)
	return nil
}
