//go:build monitoronly

package main

import "testing"

// TestMonitorManPage: docs/sonde-monitor.1, the sonde(1) of the
// sonde-monitor package (make deb), is what the monitor-only build's
// commands produce, and man reads it without a warning. `go generate
// ./cmd/sonde` rewrites it.
func TestMonitorManPage(t *testing.T) {
	checkManPage(t, "sonde-monitor.1")
}
