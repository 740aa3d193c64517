//go:build !monitoronly

package report

import (
	"fmt"
	"io"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/units"
)

// WriteLabProfiles writes `sonde lab profiles`: each built-in profile with
// its description, source and ground truth, and each link's settings.
func WriteLabProfiles(w io.Writer, scenarios []lab.Scenario) error {
	ew := &errWriter{w: w}
	for _, s := range scenarios {
		p, err := s.Parse()
		if err != nil {
			return err
		}
		g := p.GroundTruth()
		fmt.Fprintf(ew, "%s\n  %s\n  source: %s\n  base RTT %.1f ms, down %s, up %s\n",
			p.Name, p.Description, p.Source, g.BaseRTTMs, units.FormatRateLimit(g.DownRateBps), units.FormatRateLimit(g.UpRateBps))
		links := table{indent: "    "}
		for _, l := range p.Links {
			links.row(l.Name+" up:", fmt.Sprint(l.Up))
			links.row(l.Name+" down:", fmt.Sprint(l.Down))
			if len(l.UpSchedule)+len(l.DownSchedule) > 0 {
				links.row(l.Name+":", fmt.Sprintf("%d/%d schedule steps up/down", len(l.UpSchedule), len(l.DownSchedule)))
			}
		}
		_ = links.write(ew)
	}
	return ew.err
}
