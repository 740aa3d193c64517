//go:build !monitoronly

package main

import (
	"io"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
)

// checkMonitorHTML: this build renders `monitor report --html`.
func checkMonitorHTML(string) error { return nil }

func writeMonitorHTML(w io.Writer, rep *model.MonitorReport) error {
	return report.WriteMonitorHTML(w, rep)
}
