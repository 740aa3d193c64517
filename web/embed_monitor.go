//go:build monitoronly

package web

import "embed"

// dist: the monitor-only build embeds the dashboard's files alone
// (monitor.*, uplot.*): the test page's scripts are 0.1 MB it never serves.
//
//go:embed dist/monitor.* dist/uplot.*
var dist embed.FS
