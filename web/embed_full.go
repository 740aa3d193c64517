//go:build !monitoronly

package web

import "embed"

// dist: every page (the test page, the fleet page, the monitor dashboard).
//
//go:embed dist
var dist embed.FS
