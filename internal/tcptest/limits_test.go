package tcptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/server"
)

// The server's byte limit holds for the whole test, and the client says
// so: the download is cut (an error naming the limit, the figures of what
// moved kept), the upload is not run (an error, no 0 bit/s figures). The
// run measured something, so its error is not a refusal (exit 4 in the
// CLI: nothing measured), whatever the stream count: with several
// streams, a stream asked for after the others spent the budget is
// refused too, and that is part of the cut, not a refused test.
func TestRunReportsByteLimit(t *testing.T) {
	for _, tc := range []struct {
		streams int
		limit   int64
	}{{1, 16 << 20}, {4, 16 << 20}, {4, 64 << 10}} {
		t.Run(fmt.Sprintf("%d streams, %d bytes", tc.streams, tc.limit), func(t *testing.T) {
			addr := startServer(t, server.Config{PerIPPerMinute: -1, MaxBytes: tc.limit})
			res, err := Run(context.Background(), Config{
				Server: addr, Duration: time.Second, Streams: tc.streams, DSCP: -1, BaselineSamples: 20,
				NoForeign: true, NoUDP: true,
			})
			if err == nil {
				t.Fatal("a run cut by the server's byte limit reported no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "download cut short by the server's byte limit") {
				t.Errorf("error %q does not say the download was cut by the byte limit", msg)
			}
			if !strings.Contains(msg, "upload not measured: the server's byte limit") {
				t.Errorf("error %q does not say the upload was not run for the byte limit", msg)
			}
			var re *apiclient.RefusedError
			if errors.As(err, &re) {
				t.Errorf("a run that measured its download fails as refused: %v", err)
			}
			if res.Download == nil || res.Download.Bytes <= 0 || res.Download.Bytes > tc.limit {
				t.Fatalf("download result %+v: want the bytes moved, at most %d", res.Download, tc.limit)
			}
			if res.Upload != nil {
				t.Errorf("refused upload has figures: %v bit/s", res.Upload.GoodputBps)
			}
			if len(res.Errors) == 0 {
				t.Error("the result does not record the error")
			}
		})
	}
}
