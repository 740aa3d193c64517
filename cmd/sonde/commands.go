//go:build !monitoronly

package main

import "github.com/spf13/cobra"

// sondeCommands are sonde's commands. The monitor-only build (tag monitoronly,
// `make monitor-release`) has commands_monitor.go's instead.
func sondeCommands() []*cobra.Command {
	return []*cobra.Command{newServeCmd(), newTestCmd(), newUDPCmd(), newRPMCmd(), newAnalyzeCmd(), newCaptureCmd(), newLabCmd(), newEmulateCmd(), newReportCmd(), newStoreCmd(), newMonitorCmd(), newMBMCmd(), newFleetCmd()}
}
