// Package load runs many short client runs at once against one in-process
// server on loopback: no run may panic, and every run must either succeed
// or say in its result why it did not (server busy, a limit, ...). Silence
// (a UDP phase with no reply and no reason) is a failure.
package load

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
	"github.com/sonde-project/sonde/internal/tcptest"
	"github.com/sonde-project/sonde/internal/udptest"
)

const clients = 100

func startServer(t *testing.T) string {
	t.Helper()
	return startServerWith(t, server.Config{})
}

// startServerWith starts a server on loopback with cfg's limits (the UDP
// address, per-IP start rate and software name are set here).
func startServerWith(t *testing.T, cfg server.Config) string {
	t.Helper()
	cfg.UDPAddr, cfg.PerIPPerMinute, cfg.Software = "127.0.0.1:0", -1, "sonde/load-test"
	return "http://" + servertest.Start(t, cfg)
}

// outcome is one run's verdict: ok, or the reason it gave.
type outcome struct {
	ok     bool
	reason string
}

func tally(t *testing.T, kind string, outs []outcome) {
	t.Helper()
	reasons := map[string]int{}
	ok := 0
	for _, o := range outs {
		if o.ok {
			ok++
			continue
		}
		if strings.TrimSpace(o.reason) == "" {
			t.Errorf("%s: a run failed without a reason", kind)
		}
		// Group by the reason's first words.
		r := o.reason
		if len(r) > 60 {
			r = r[:60]
		}
		reasons[r]++
	}
	t.Logf("%s: %d of %d succeeded; failures: %v", kind, ok, len(outs), reasons)
}

// TestConcurrentTests: 100 `sonde test` runs at once (1 s phases, one
// stream, with their STAMP probes).
func TestConcurrentTests(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	tally(t, "sonde test", runConcurrentTests(startServer(t), func(*model.Result) {}))
}

// runConcurrentTests runs `sonde test` from clients goroutines at once (1 s
// phases, one stream, with their STAMP probes), judges each run and hands
// each result that came back to seen, from the run's goroutine.
func runConcurrentTests(addr string, seen func(*model.Result)) []outcome {
	outs := make([]outcome, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			res, err := tcptest.Run(ctx, tcptest.Config{Server: addr, Duration: time.Second, Streams: 1, BaselineSamples: 20,
				DSCP: -1, Software: "sonde/load-test"})
			outs[i] = judgeTest(res, err)
			if res != nil {
				seen(res)
			}
		}()
	}
	wg.Wait()
	return outs
}

func judgeTest(res *model.Result, err error) outcome {
	var why []string
	if err != nil {
		why = append(why, err.Error())
	}
	if res == nil {
		return outcome{reason: strings.Join(why, "; ")}
	}
	why = append(why, res.Errors...)
	// A UDP probe phase that sent and heard nothing must say why.
	for _, f := range phasesOf(res) {
		if f.Sent > 0 && f.Replies == 0 {
			if len(f.Errors) == 0 && len(why) == 0 {
				return outcome{reason: ""} // silence: tally flags it
			}
			why = append(why, f.Errors...)
		}
	}
	if len(why) == 0 {
		return outcome{ok: true}
	}
	return outcome{reason: strings.Join(why, "; ")}
}

// TestConcurrentUDP: 100 `sonde udp` runs at once. A flow that sent
// probes and got no reply must say why.
func TestConcurrentUDP(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	runConcurrentUDP(t, startServer(t))
}

// TestConcurrentUDPAllAdmitted: as TestConcurrentUDP, with 100 test slots,
// so all 100 sessions probe the reflector at once.
func TestConcurrentUDPAllAdmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	runConcurrentUDP(t, startServerWith(t, server.Config{MaxConcurrent: clients, MaxConnsPerIP: 20 * clients}))
}

func runConcurrentUDP(t *testing.T, addr string) {
	t.Helper()
	outs := make([]outcome, clients)
	var wg sync.WaitGroup
	silent := 0
	var mu sync.Mutex
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			o := udptest.Options{Server: addr, Duration: time.Second, Interval: 20 * time.Millisecond, PacketBytes: 64,
				Timeout: time.Second, Software: "sonde/load-test"}
			res, err := udptest.Run(ctx, o)
			out := outcome{ok: err == nil}
			if err != nil {
				out.reason = err.Error()
			}
			if res != nil {
				out.ok = out.ok && len(res.Errors) == 0
				for _, f := range res.Flows {
					why := strings.Join(append(append([]string{}, f.Errors...), res.Errors...), "; ")
					if f.Sent > 0 && f.Replies == 0 {
						out.ok = false
						if why == "" && out.reason == "" {
							mu.Lock()
							silent++
							mu.Unlock()
						}
					}
					if why != "" {
						out.reason = strings.TrimPrefix(out.reason+"; "+why, "; ")
					}
				}
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	tally(t, "sonde udp", outs)
	if silent > 0 {
		t.Errorf("%d of %d UDP runs got no reply and give no reason", silent, clients)
	}
}

// TestConcurrentTestsAllAdmitted: a server with 100 test slots, so all 100
// `sonde test` runs are admitted and run their STAMP probe phases at once,
// each beside a loaded TCP stream. No phase may be silent without a reason,
// and a phase that lost probes must name a cause when sonde can see one
// (the reflector's rate limit, expiry, the kernel's buffer drops). Before
// the reflector judged its rate limit on kernel arrival times, half of
// these probes were dropped by it and counted as forward loss.
func TestConcurrentTestsAllAdmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	addr := startServerWith(t, server.Config{MaxConcurrent: clients, MaxStreams: 4, MaxConnsPerIP: 20 * clients})
	var (
		mu                                  sync.Mutex
		phases, sent, replies, lossy, quiet int
	)
	outs := runConcurrentTests(addr, func(res *model.Result) {
		mu.Lock()
		defer mu.Unlock()
		for _, f := range phasesOf(res) {
			phases++
			sent += f.Sent
			replies += f.Replies
			if f.Replies < f.Sent {
				lossy++
				if len(f.Errors) == 0 {
					quiet++
				}
			}
		}
	})
	tally(t, "sonde test (100 slots)", outs)
	t.Logf("%d UDP probe phases: %d probes sent, %d replies; %d phases lost probes, %d of them without a named cause",
		phases, sent, replies, lossy, quiet)
	if phases < clients {
		t.Errorf("only %d UDP probe phases ran for %d admitted tests", phases, clients)
	}
}

// phasesOf returns a result's STAMP probe phases that ran.
func phasesOf(res *model.Result) []*model.UDPFlow {
	var out []*model.UDPFlow
	if res.BaselineUDP != nil {
		out = append(out, res.BaselineUDP)
	}
	for _, d := range []*model.DirectionResult{res.Download, res.Upload} {
		if d != nil && d.UDPLatency != nil {
			out = append(out, d.UDPLatency)
		}
	}
	return out
}
