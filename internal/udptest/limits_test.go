package udptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/stamp"
)

// A run longer than the server's limit is clamped to the grant with a note;
// the probes the server would not reflect are never sent, so none of it
// shows as loss.
func TestRunLongerThanServerLimit(t *testing.T) {
	addr := startServer(t, server.Config{MaxDuration: time.Second})
	res, err := Run(context.Background(), Options{
		Server: addr, Software: "sonde-test", Interval: 10 * time.Millisecond, Duration: 3 * time.Second,
		PacketBytes: 64, Timeout: time.Second,
	})
	if err != nil {
		t.Fatalf("clamped run failed: %v", err)
	}
	f := res.Flows[0]
	if f.Sent != 100 {
		t.Errorf("sent %d probes, want 100 (1 s granted at 10 ms)", f.Sent)
	}
	if f.Forward.Lost != 0 || f.Backward.Lost != 0 {
		t.Errorf("the server's limit shows as loss: forward %d, backward %d of %d", f.Forward.Lost, f.Backward.Lost, f.Sent)
	}
	if res.Config.DurationS != 1 {
		t.Errorf("result duration %.3f s, want the granted 1 s", res.Config.DurationS)
	}
	if len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, "\n"), "limits UDP sessions") {
		t.Errorf("no note about the server's limit: %q", res.Notes)
	}
}

func TestGranted(t *testing.T) {
	const s = time.Second
	for _, c := range []struct {
		rep           stamp.SessionReply
		want, timeout time.Duration
		grant         time.Duration
	}{
		{stamp.SessionReply{DurationS: 13, ExpiresS: 18}, 10 * s, 3 * s, 10 * s},    // as asked
		{stamp.SessionReply{DurationS: 5, ExpiresS: 10}, 15 * s, 3 * s, 5 * s},      // the server's limit
		{stamp.SessionReply{ExpiresS: 10}, 15 * s, 3 * s, 7 * s},                    // older server: expiry only
		{stamp.SessionReply{DurationS: 1e300, ExpiresS: 1e300}, 2 * s, s, 2 * s},    // no overflow
		{stamp.SessionReply{DurationS: 5, ExpiresS: 2}, 15 * s, 3 * s, 0},           // nothing left
		{stamp.SessionReply{DurationS: -1, ExpiresS: 1e300}, 15 * s, 3 * s, 15 * s}, // nonsense ignored
	} {
		if g := granted(c.rep, c.want, c.timeout); g != c.grant {
			t.Errorf("granted(%+v, %v, %v) = %v, want %v", c.rep, c.want, c.timeout, g, c.grant)
		}
	}
}
