//go:build monitoronly

package main

import "github.com/spf13/cobra"

// sondeCommands: the commands of the monitor-only build (`make monitor-release`, for
// gateways and small boards, docs/monitor.md "Where to run it"): `sonde
// monitor` (run, status, report, alerts) and nothing that serves, emulates,
// captures or drives load.
func sondeCommands() []*cobra.Command {
	return []*cobra.Command{newMonitorCmd()}
}
