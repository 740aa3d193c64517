//go:build monitoronly

package main

import (
	"errors"
	"io"

	"github.com/sonde-project/sonde/internal/model"
)

// checkMonitorHTML refuses `monitor report --html` in the monitor-only
// build: executing html/template keeps every exported method of every
// type linked (the templates reach methods by name through reflection),
// 2.2 MB of the 13.7 MB arm64 executable (docs/monitor.md, "Where to run
// it"). The JSON report renders to HTML with the full sonde.
func checkMonitorHTML(html string) error {
	if html == "" {
		return nil
	}
	return usagef("--html: the monitor-only build has no HTML renderer: write --json FILE and render it elsewhere with `sonde report FILE --html`")
}

func writeMonitorHTML(io.Writer, *model.MonitorReport) error {
	return errors.New("--html: not in the monitor-only build")
}
