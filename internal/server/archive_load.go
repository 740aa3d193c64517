package server

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/httpload"
	"github.com/sonde-project/sonde/internal/model"
)

// loadTest records one HTTP load test (RPM, LibreSpeed) as the server saw
// it: its connections joined by the assembler of every server record
// (TCP_INFO series, goodput, retransmissions and RFC 6349 figures of the
// connections it sent on, receive counts of those it read uploads on).
func (a *archive) loadTest(sum httpload.Summary) {
	kind := model.KindRPM
	if sum.Protocol == "librespeed" {
		kind = model.KindLibreSpeed
	}
	a.save(kind, func() *model.ServerRecord {
		rec := assemble.ServerSession(sum.Reports)
		rec.Start, rec.End = sum.Start.UTC(), sum.End.UTC()
		rec.Client = model.Endpoint{Address: sum.Client}
		switch sum.Cut {
		case "":
			rec.Ended = "closed by the client"
		default:
			rec.Ended = sum.Cut
		}
		rec.Notes = append(rec.Notes, "HTTP load test: one flow per connection and direction, over all the client IP's load requests together (a client that ran download and upload one after the other has both in one record)",
			fmt.Sprintf("load requests: %d; payload bytes written %d, read %d", sum.Flows, sum.Sent, sum.Received))
		if sum.Unrecorded > 0 {
			rec.Notes = append(rec.Notes, fmt.Sprintf("%d further connections carried load but are not recorded (a record keeps as many as a test may load at once)", sum.Unrecorded))
		}
		return rec
	})
}
