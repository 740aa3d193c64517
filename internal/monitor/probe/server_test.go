package probe_test

// The tests against a real sonde server live outside package probe: the
// server imports iperf3, whose client probes through this package.

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
	"github.com/sonde-project/sonde/internal/stamp"
	"net/netip"
)

// run is the package's own test helper (probe_test.go).
var run = probe.Run

func startServer(t *testing.T) string {
	return servertest.Start(t, server.Config{UDPAddr: "127.0.0.1:0", PerIPPerMinute: -1})
}

func TestSTAMPToSondeServer(t *testing.T) {
	addr := startServer(t)
	op, err := probe.HTTPSessions(addr, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	all, last, st := run(t, probe.Config{Streams: []probe.StreamConfig{{Kind: model.ProbeSTAMP, Sessions: op, Rate: 50, DSCP: 46}}}, 1500*time.Millisecond)
	if st[0].Sent < 50 {
		t.Fatalf("sent %d probes in 1.5 s at 50/s", st[0].Sent)
	}
	// The probes of the last timeout may be unanswered at Close; all
	// others must be answered, once, with a plausible loopback RTT and
	// the same-host one-way delays.
	if st[0].Answered+2 < st[0].Sent || st[0].Lost != 0 || st[0].Unmatched != 0 {
		t.Fatalf("stats %+v", st[0])
	}
	if len(last) != len(all) {
		t.Fatalf("%d samples for %d probes", len(all), len(last))
	}
	for _, s := range all {
		if s.RTTNs <= 0 || s.RTTNs > int64(100*time.Millisecond) || s.Lost {
			t.Fatalf("sample %+v", s)
		}
		if s.FwdNs < 0 || s.RevNs < 0 || s.FwdNs+s.RevNs > s.RTTNs {
			t.Fatalf("one-way delays %d + %d against RTT %d", s.FwdNs, s.RevNs, s.RTTNs)
		}
	}
}

func TestMonitorSessionRenewalWithoutGap(t *testing.T) {
	addr := startServer(t)
	op, err := probe.HTTPSessions(addr, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &shortGrant{SessionOpener: op}
	_, last, st := run(t, probe.Config{Streams: []probe.StreamConfig{{Kind: model.ProbeSTAMP, Sessions: g, Rate: 50, Timeout: 100 * time.Millisecond}}}, 4500*time.Millisecond)
	if st[0].Renewals < 2 {
		t.Fatalf("%d renewals in 4.5 s of 1.5 s grants (stats %+v)", st[0].Renewals, st[0])
	}
	// Every probe up to the last timeout answered in time: no gap at
	// any switch of session.
	var lost []uint32
	for k, s := range last {
		if s.Lost && s.SentNs < lastSent(last)-int64(200*time.Millisecond) {
			lost = append(lost, uint32(k[1]))
		}
	}
	if len(lost) > 0 || st[0].Lost > 1 {
		t.Fatalf("lost probes %v across renewals (stats %+v)", lost, st[0])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.closed) != len(g.opened) {
		t.Fatalf("opened %d sessions, closed %d", len(g.opened), len(g.closed))
	}
}

func lastSent(m map[[2]int64]model.ProbeSample) int64 {
	var t int64
	for _, s := range m {
		t = max(t, s.SentNs)
	}
	return t
}

func TestMonitorSessionLimits(t *testing.T) {
	addr := startServer(t)
	op, err := probe.HTTPSessions(addr, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := stamp.SessionRequest{DurationS: 86400, IntervalUs: 1e5, PacketBytes: 44, Monitor: true}
	for _, c := range []struct {
		mod  func(*stamp.SessionRequest)
		want string
	}{
		{func(r *stamp.SessionRequest) { r.IntervalUs = 9000 }, "monitor limit of 100"},
		{func(r *stamp.SessionRequest) { r.PacketBytes = 201 }, "monitor limit of 200"},
		{func(r *stamp.SessionRequest) { r.DurationS = 86401 }, "duration_s"},
		{func(r *stamp.SessionRequest) { r.TestSession = "x" }, "cannot belong"},
	} {
		req := base
		c.mod(&req)
		if _, _, err := op.Open(ctx, req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("request %+v: error %v, want %q", req, err, c.want)
		}
	}
	// A day's grant, beyond the server's test duration limit.
	rep, _, err := op.Open(ctx, base)
	if err != nil || rep.DurationS != 86400 {
		t.Fatalf("grant %+v, %v", rep, err)
	}
	ids := []string{rep.ID}
	for range 40 {
		rep, _, err := op.Open(ctx, base)
		if err != nil {
			if !strings.Contains(err.Error(), "too many monitor sessions") {
				t.Fatal(err)
			}
			break
		}
		ids = append(ids, rep.ID)
	}
	if len(ids) != 32 {
		t.Fatalf("%d monitor sessions granted to one client, want the cap of 32", len(ids))
	}
	// Closing one frees its slot.
	if err := op.Close(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := op.Open(ctx, base); err != nil {
		t.Fatalf("after a close: %v", err)
	}
	_ = http.StatusOK
}

// shortGrant makes the server grant a few seconds, to see renewals.
type shortGrant struct {
	probe.SessionOpener
	mu     sync.Mutex
	opened []string
	closed []string
}

func (g *shortGrant) Open(ctx context.Context, req stamp.SessionRequest) (stamp.SessionReply, netip.AddrPort, error) {
	req.DurationS = 1.5
	rep, a, err := g.SessionOpener.Open(ctx, req)
	if err == nil {
		g.mu.Lock()
		g.opened = append(g.opened, rep.ID)
		g.mu.Unlock()
	}
	return rep, a, err
}

func (g *shortGrant) Close(ctx context.Context, id string) error {
	g.mu.Lock()
	g.closed = append(g.closed, id)
	g.mu.Unlock()
	return g.SessionOpener.Close(ctx, id)
}
