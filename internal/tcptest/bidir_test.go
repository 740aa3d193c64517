package tcptest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
)

// TestRunBidirLoopback: the bidirectional phase moves data both ways at
// the same time (each direction's receiver counted bytes through most of
// the other's span), reports both directions' goodput and one latency
// under load, and is graded; the one-way phases are not run.
func TestRunBidirLoopback(t *testing.T) {
	addr := startServer(t, server.Config{PerIPPerMinute: -1})
	res, err := Run(context.Background(), Config{Server: addr, Duration: 2 * time.Second, DSCP: -1, Bidir: true, NoUDP: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Download != nil || res.Upload != nil {
		t.Fatalf("one-way phases ran: %v %v", res.Download != nil, res.Upload != nil)
	}
	b := res.Bidir
	if b == nil || b.Download == nil || b.Upload == nil {
		t.Fatalf("bidir %+v", b)
	}
	if b.Latency == nil || b.Latency.RTTMs.N < 20 || b.Download.Latency != nil || b.Upload.Latency != nil {
		t.Fatalf("bidir latency %+v (directions' %v, %v)", b.Latency, b.Download.Latency, b.Upload.Latency)
	}
	if b.DurationS < 1.5 || b.DurationS > 4 {
		t.Errorf("bidir duration %v s", b.DurationS)
	}
	for _, d := range []*model.DirectionResult{b.Download, b.Upload} {
		if d.GoodputBps < 50e6 || len(d.Flows) == 0 || d.Bytes <= 0 {
			t.Fatalf("bidir %s: goodput %v, %d flows, %d bytes", d.Direction, d.GoodputBps, len(d.Flows), d.Bytes)
		}
	}
	// At once: the spans in which each direction moved data overlap for
	// most of the phase.
	lo, hi := span(b.Download), span(b.Upload)
	overlap := min(lo[1], hi[1]) - max(lo[0], hi[0])
	if overlap < 0.7*b.DurationS {
		t.Fatalf("download moved data in %v s, upload in %v s: overlap %.2f s of a %.2f s phase", lo, hi, overlap, b.DurationS)
	}
	if g := res.Grades; g == nil || g.Bufferbloat == nil || g.Bufferbloat.Bidir == nil || g.Bufferbloat.Overall != nil {
		t.Fatalf("grades %+v", res.Grades)
	}
}

// span is the first and last time a direction's aggregate throughput was
// above zero.
func span(d *model.DirectionResult) [2]float64 {
	s := [2]float64{-1, -1}
	for _, p := range d.Throughput {
		if p.Bps > 0 {
			if s[0] < 0 {
				s[0] = p.TS
			}
			s[1] = p.TS
		}
	}
	return s
}

// TestBidirSessionNeed: the session asks room for the bidirectional phase
// too, so a server whose limit is too short refuses before any load.
func TestBidirSessionNeed(t *testing.T) {
	addr := startServer(t, server.Config{PerIPPerMinute: -1, MaxDuration: 25 * time.Second})
	// Three phases of 8 s and the slack need 34 s: refused before any load.
	_, err := Run(context.Background(), Config{Server: addr, Duration: 8 * time.Second, DSCP: -1,
		Download: true, Upload: true, Bidir: true})
	if err == nil || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("err = %v, want the server's duration limit", err)
	}
}
