package tcptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/server"
)

// The server's byte limit holds for the whole test, and the client says
// so: the download is cut (an error naming the limit, the figures of what
// moved kept), the upload is refused (an error, no 0 bit/s figures).
func TestRunReportsByteLimit(t *testing.T) {
	const limit = 16 << 20
	addr := startServer(t, server.Config{PerIPPerMinute: -1, MaxBytes: limit})
	res, err := Run(context.Background(), Config{
		Server: addr, Duration: time.Second, Streams: 4, DSCP: -1, BaselineSamples: 20,
		NoForeign: true, NoUDP: true,
	})
	if err == nil {
		t.Fatal("a run cut by the server's byte limit reported no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, "download cut short by the server's byte limit") {
		t.Errorf("error %q does not say the download was cut by the byte limit", msg)
	}
	if !strings.Contains(msg, "open upload stream") || !strings.Contains(msg, "byte limit") {
		t.Errorf("error %q does not say the upload was refused for the byte limit", msg)
	}
	if res.Download == nil || res.Download.Bytes <= 0 || res.Download.Bytes > limit {
		t.Fatalf("download result %+v: want the bytes moved, at most %d", res.Download, limit)
	}
	if res.Upload != nil {
		t.Errorf("refused upload has figures: %v bit/s", res.Upload.GoodputBps)
	}
	if len(res.Errors) == 0 {
		t.Error("the result does not record the error")
	}
}
