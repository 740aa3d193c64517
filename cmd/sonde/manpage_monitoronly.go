//go:build monitoronly

package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/clidoc"
)

// writeManPage writes the monitor-only build's sonde(1)
// (docs/sonde-monitor.1, the sonde-monitor package's), as clidoc.go does
// sonde's: TestMonitorManPage fails when the committed page differs, and
// `go generate ./cmd/sonde` rewrites it.
func writeManPage(w io.Writer, root *cobra.Command) error {
	return clidoc.ManWith(w, root, exitCodes, clidoc.MonitorTail())
}
