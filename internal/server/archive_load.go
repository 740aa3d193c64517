package server

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/model"
)

// loadTest records one HTTP load test (RPM, LibreSpeed) as the server saw
// it: the bytes it wrote and read over the test's span. These tests run
// over many short connections, often HTTP/2 shared with probes, so there
// is no per-flow TCP_INFO series to record.
func (a *archive) loadTest(sum httpload.Summary) {
	kind := model.KindRPM
	if sum.Protocol == "librespeed" {
		kind = model.KindLibreSpeed
	}
	a.save(kind, func() *model.ServerRecord {
		secs := sum.End.Sub(sum.Start).Seconds()
		rec := &model.ServerRecord{Start: sum.Start.UTC(), End: sum.End.UTC(),
			Client: model.Endpoint{Address: sum.Client}, Ended: sum.Cut}
		if rec.Ended == "" {
			rec.Ended = "closed by the client"
		}
		dir := func(name string, bytes int64) *model.DirectionResult {
			if bytes == 0 {
				return nil
			}
			d := &model.DirectionResult{Direction: name, DurationS: secs, Bytes: bytes}
			if secs > 0 {
				d.GoodputBps = float64(bytes) * 8 / secs
			}
			return d
		}
		rec.Download, rec.Upload = dir("download", sum.Sent), dir("upload", sum.Received)
		rec.Notes = append(rec.Notes, "HTTP load test: payload bytes the server wrote (download) and read (upload) from the first load request to the end of the last, over all the client IP's requests together; goodput is over that span, which holds both directions when a client ran them one after the other",
			fmt.Sprintf("load requests: %d", sum.Flows))
		return rec
	})
}
