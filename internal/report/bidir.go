package report

import (
	"strings"

	"github.com/sonde-project/sonde/internal/model"
)

// bidirViews are the bidirectional phase's directions, each shown as a load
// phase of its own with the phase's latency under load (the same for both:
// they ran at once), keyed "bidir-download" and "bidir-upload".
func bidirViews(r *model.Result) []directionView {
	b := r.Bidir
	if b == nil {
		return nil
	}
	var out []directionView
	for _, x := range []struct {
		d           *model.DirectionResult
		title, with string
	}{{b.Download, "Bidirectional: download", "upload"}, {b.Upload, "Bidirectional: upload", "download"}} {
		if x.d == nil {
			continue
		}
		d := *x.d
		d.Latency, d.UDPLatency = b.Latency, b.UDPLatency
		dv := buildDirection(r, &d)
		dv.Key, dv.Title = "bidir-"+dv.Key, x.title+" (at once with "+x.with+")"
		// The queue grew under both loads, not this direction's alone.
		dv.Verdict = strings.Replace(dv.Verdict, d.Direction+" adds", "download and upload at once add", 1)
		out = append(out, dv)
	}
	return out
}
