package integration

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// serverPort is the port of the server in a namespace; each test has its
// own namespaces, so a fixed port never collides.
const serverPort = "9000"

// runTimeout bounds one `sonde test` of a few seconds per phase.
const runTimeout = 60 * time.Second

// Overheads of a TCP segment over IPv4 with the timestamp option, which
// Linux enables by default: MSS = path MTU − 20 (IP) − 20 (TCP) − 12.
const tcpIPTimestampOverhead = 52

// TestNamespacesEndToEnd runs a server and a client in two namespaces over
// a veth pair (MTU 1500, no loss) with two fixed streams, and checks every
// part of the result against what that path is.
func TestNamespacesEndToEnd(t *testing.T) {
	tp := newTopo(t)
	srv := startServer(t, tp.srv, "--addr", tp.srvIP+":"+serverPort)
	res, _ := runJSON(t, tp.cli, runTimeout, srv.addr(), "-t", "2s", "--streams", "2")

	if res.Schema != model.SchemaVersion {
		t.Errorf("schema %q, want %q", res.Schema, model.SchemaVersion)
	}
	if res.ID == "" {
		t.Error("no session ID in the result")
	}
	if res.Config.Streams != "2" || res.Config.DurationS != 2 {
		t.Errorf("config streams %q duration %v s, want 2 and 2", res.Config.Streams, res.Config.DurationS)
	}
	if !strings.HasPrefix(res.Server.Software, "sonde/") {
		t.Errorf("server software %q, want sonde/...", res.Server.Software)
	}
	checkBaseline(t, res.Baseline)
	for _, d := range []struct {
		name, sender string
		r            *model.DirectionResult
	}{{"download", "server", res.Download}, {"upload", "client", res.Upload}} {
		t.Run(d.name, func(t *testing.T) {
			checkDirection(t, d.r, d.name, d.sender, 2, 1500)
			if rfc := d.r.RFC6349; rfc != nil {
				if rfc.TTR != 0 || rfc.IdealTransferS != 0 {
					t.Errorf("TTR %v ideal %v s without --link-rate, want 0", rfc.TTR, rfc.IdealTransferS)
				}
				if !hasNote(rfc.Notes, "--link-rate") {
					t.Errorf("no note that TTR needs --link-rate: %q", rfc.Notes)
				}
			}
		})
	}
}

// TestNamespacesStreamsAuto checks that --streams auto runs and says so.
func TestNamespacesStreamsAuto(t *testing.T) {
	tp := newTopo(t)
	srv := startServer(t, tp.srv, "--addr", tp.srvIP+":"+serverPort)
	res, _ := runJSON(t, tp.cli, runTimeout, srv.addr(), "-t", "2s", "--streams", "auto", "--max-streams", "4")
	if res.Config.Streams != "auto" {
		t.Errorf("config streams %q, want auto", res.Config.Streams)
	}
	for _, d := range []*model.DirectionResult{res.Download, res.Upload} {
		if d == nil {
			t.Fatal("a direction is missing")
		}
		if d.StreamsMode != "auto" {
			t.Errorf("%s: streams_mode %q, want auto", d.Direction, d.StreamsMode)
		}
		// auto starts with two streams and may add up to --max-streams.
		if d.Streams < 2 || d.Streams > 4 || len(d.Flows) != d.Streams {
			t.Errorf("%s: %d streams with %d flows, want 2-4 and as many flows", d.Direction, d.Streams, len(d.Flows))
		}
		if d.GoodputBps < 100e6 {
			t.Errorf("%s: goodput %.0f bit/s, want > 100 Mbit/s", d.Direction, d.GoodputBps)
		}
		t.Logf("%s: %d streams, %.2f Gbit/s", d.Direction, d.Streams, d.GoodputBps/1e9)
	}
}

// TestNamespacesLinkRate checks the RFC 6349 link figures (maximum
// goodput from MSS and frame size, BDP from the baseline RTT, ideal
// transfer time, TTR) on two paths: one shaped below the given link rate,
// where TTR must be at least 1 and goodput must match the shaper, and the
// bare veth, which runs faster than 10 Gbit/s on most hosts, where TTR < 1
// must come with a note.
func TestNamespacesLinkRate(t *testing.T) {
	t.Run("shaped", func(t *testing.T) {
		tp := newTopo(t)
		// A token bucket at 900 Mbit/s on the server's egress counts
		// 1514 B per full frame, so the payload rate is at most
		// 900M × 1448/1514 = 860.8 Mbit/s, below a 1G link's 941.5.
		const shaper = 900e6
		tp.shape(t, tp.srv, tp.srvIf, "900mbit")
		srv := startServer(t, tp.srv, "--addr", tp.srvIP+":"+serverPort)
		res, _ := runJSON(t, tp.cli, runTimeout, srv.addr(), "-t", "2s", "--streams", "2",
			"--direction", "download", "--link-rate", "1G")
		rfc := checkLinkFigures(t, res, 1e9)
		if rfc.TTR < 1 {
			t.Errorf("TTR %v < 1 on a path shaped below the link rate", rfc.TTR)
		}
		// With a bucket that outlasts late timer wakeups (see shape),
		// two busy-looping processes beside the test did not move the
		// figure below 860.0 (5 runs).
		payload := shaper * 1448 / 1514
		if rfc.GoodputBps > payload*1.02 || rfc.GoodputBps < payload*0.97 {
			t.Errorf("steady goodput %.1f Mbit/s, want %.1f Mbit/s (the shaper's payload rate) -3%%/+2%%", rfc.GoodputBps/1e6, payload/1e6)
		}
	})
	t.Run("10G", func(t *testing.T) {
		tp := newTopo(t)
		srv := startServer(t, tp.srv, "--addr", tp.srvIP+":"+serverPort)
		res, _ := runJSON(t, tp.cli, runTimeout, srv.addr(), "-t", "2s", "--streams", "2",
			"--direction", "download", "--link-rate", "10G")
		rfc := checkLinkFigures(t, res, 10e9)
		switch {
		case rfc.GoodputBps <= rfc.MaxGoodputBps && rfc.TTR < 1:
			t.Errorf("TTR %v < 1 with goodput %.3g below the maximum %.3g", rfc.TTR, rfc.GoodputBps, rfc.MaxGoodputBps)
		case rfc.GoodputBps > rfc.MaxGoodputBps && !hasNote(rfc.Notes, "TTR"):
			t.Errorf("goodput %.3g beat the maximum %.3g but no note says TTR < 1: %q", rfc.GoodputBps, rfc.MaxGoodputBps, rfc.Notes)
		}
	})
}

// checkLinkFigures checks the download RFC 6349 block's link figures for
// --link-rate rate against their definitions.
func checkLinkFigures(t *testing.T, res *model.Result, rate float64) *model.RFC6349 {
	t.Helper()
	if res.Config.LinkRateBps != rate {
		t.Errorf("config link rate %v, want %v", res.Config.LinkRateBps, rate)
	}
	if res.Upload != nil {
		t.Error("upload ran with --direction download")
	}
	if res.Download == nil || res.Download.RFC6349 == nil {
		t.Fatal("no download RFC 6349 report")
	}
	rfc := res.Download.RFC6349
	if rfc.MSS != 1448 || rfc.PathMTU != 1500 {
		t.Errorf("MSS %d MTU %d, want 1448 and 1500", rfc.MSS, rfc.PathMTU)
	}
	if rfc.LinkRateBps != rate {
		t.Errorf("RFC 6349 link rate %v, want %v", rfc.LinkRateBps, rate)
	}
	wantMax := float64(rfc.MSS) / float64(rfc.PathMTU+38) * rate
	if rfc.MSS == 0 || math.Abs(rfc.MaxGoodputBps-wantMax) > 1 {
		t.Errorf("max goodput %.0f bit/s, want MSS/(MTU+38)×rate = %.0f", rfc.MaxGoodputBps, wantMax)
	}
	if rfc.IdealTransferS <= 0 {
		t.Fatalf("ideal transfer time %v s, want > 0", rfc.IdealTransferS)
	}
	if want := float64(rfc.Bytes) * 8 / rfc.MaxGoodputBps; math.Abs(rfc.IdealTransferS-want) > 1e-9*want {
		t.Errorf("ideal transfer time %v s, want bytes×8/max goodput = %v s", rfc.IdealTransferS, want)
	}
	if want := rfc.DurationS / rfc.IdealTransferS; math.Abs(rfc.TTR-want) > 1e-9*want {
		t.Errorf("TTR %v, want duration/ideal = %v", rfc.TTR, want)
	}
	if want := rate * res.Baseline.RTTMs.Min / 1000; want <= 0 || math.Abs(rfc.BDPBits-want) > 1e-6*want {
		t.Errorf("BDP %v bit, want rate × baseline min RTT = %v", rfc.BDPBits, want)
	}
	t.Logf("steady goodput %.3f Gbit/s over %.2f s, max %.3f Gbit/s, ideal %.3f s, TTR %.3f, BDP %.0f bit",
		rfc.GoodputBps/1e9, rfc.DurationS, rfc.MaxGoodputBps/1e9, rfc.IdealTransferS, rfc.TTR, rfc.BDPBits)
	return rfc
}

// TestNamespacesSmallMTU sets MTU 1280 on both veth ends and checks that
// the report sees it, with the matching MSS, in both directions.
func TestNamespacesSmallMTU(t *testing.T) {
	tp := newTopo(t)
	tp.setMTU(t, 1280)
	srv := startServer(t, tp.srv, "--addr", tp.srvIP+":"+serverPort)
	res, _ := runJSON(t, tp.cli, runTimeout, srv.addr(), "-t", "1s", "--streams", "2")
	checkBaseline(t, res.Baseline)
	t.Run("download", func(t *testing.T) { checkDirection(t, res.Download, "download", "server", 2, 1280) })
	t.Run("upload", func(t *testing.T) { checkDirection(t, res.Upload, "upload", "client", 2, 1280) })
}

// checkBaseline checks the idle RTT of a veth path: enough samples, a
// plausible minimum, and the server's TCP_INFO view.
func checkBaseline(t *testing.T, b *model.RTTResult) {
	t.Helper()
	if b == nil {
		t.Fatal("no baseline")
	}
	if b.RTTMs.N < 20 || len(b.Samples) != b.RTTMs.N {
		t.Errorf("baseline n=%d with %d samples, want ≥ 20 and equal", b.RTTMs.N, len(b.Samples))
	}
	if !(b.RTTMs.Min > 0 && b.RTTMs.Min < 5) {
		t.Errorf("baseline min RTT %v ms, want in (0, 5) on a veth", b.RTTMs.Min)
	}
	if !(b.RTTMs.Min <= b.RTTMs.P50 && b.RTTMs.P50 <= b.RTTMs.Max) {
		t.Errorf("baseline stats out of order: %+v", b.RTTMs)
	}
	if !(b.ClientMinRTTMs > 0 && b.ClientMinRTTMs < 5) || !(b.ServerMinRTTMs > 0 && b.ServerMinRTTMs < 5) {
		t.Errorf("probe TCP_INFO min RTT client %v ms server %v ms, want both in (0, 5)", b.ClientMinRTTMs, b.ServerMinRTTMs)
	}
	t.Logf("baseline: n=%d min %.3f ms median %.3f ms", b.RTTMs.N, b.RTTMs.Min, b.RTTMs.P50)
}

// checkDirection checks one load phase over a loss-free veth with the
// given MTU and fixed stream count.
func checkDirection(t *testing.T, d *model.DirectionResult, dir, sender string, streams int, mtu uint32) {
	t.Helper()
	if d == nil {
		t.Fatalf("no %s result", dir)
	}
	if d.Direction != dir || d.StreamsMode != "fixed" || d.Streams != streams || len(d.Flows) != streams {
		t.Errorf("direction %q mode %q streams %d flows %d, want %s fixed %d", d.Direction, d.StreamsMode, d.Streams, len(d.Flows), dir, streams)
	}
	if d.GoodputBps < 100e6 {
		t.Errorf("goodput %.0f bit/s, want > 100 Mbit/s on a veth", d.GoodputBps)
	}
	if len(d.Throughput) == 0 {
		t.Error("no throughput series")
	}
	var sum int64
	for _, f := range d.Flows {
		sum += f.Bytes
		if f.Sender != sender {
			t.Errorf("flow %d: sender %q, want %q", f.ID, f.Sender, sender)
		}
		if len(f.TCPInfo) == 0 {
			t.Errorf("flow %d: empty TCP_INFO series", f.ID)
		}
		if f.Bytes <= 0 || f.GoodputBps <= 0 {
			t.Errorf("flow %d: %d bytes at %.0f bit/s, want > 0", f.ID, f.Bytes, f.GoodputBps)
		}
		for _, s := range f.TCPInfo {
			if s.PMTU == 0 {
				continue
			}
			if s.PMTU != mtu || s.SndMSS != s.PMTU-tcpIPTimestampOverhead {
				t.Errorf("flow %d at %.3f s: pmtu %d snd_mss %d, want %d and %d", f.ID, s.TS, s.PMTU, s.SndMSS, mtu, mtu-tcpIPTimestampOverhead)
				break
			}
		}
	}
	if d.Bytes <= 0 || math.Abs(float64(sum-d.Bytes)) > 0.01*float64(d.Bytes) {
		t.Errorf("flows carry %d bytes in all, the direction %d; want them equal within 1%%", sum, d.Bytes)
	}

	rfc := d.RFC6349
	if rfc == nil {
		t.Fatal("no RFC 6349 block")
	}
	if rfc.PathMTU != mtu || rfc.MSS != mtu-tcpIPTimestampOverhead {
		t.Errorf("RFC 6349 path MTU %d MSS %d, want %d and %d", rfc.PathMTU, rfc.MSS, mtu, mtu-tcpIPTimestampOverhead)
	}
	if !(rfc.EfficiencyPct > 90 && rfc.EfficiencyPct <= 100) {
		t.Errorf("efficiency %v%%, want in (90, 100] on a loss-free veth", rfc.EfficiencyPct)
	}
	if rfc.DurationS <= 0 || rfc.Bytes <= 0 || rfc.GoodputBps < 100e6 {
		t.Errorf("steady state %v s, %d bytes, %.0f bit/s; want a window above 100 Mbit/s", rfc.DurationS, rfc.Bytes, rfc.GoodputBps)
	}
	if rfc.BytesSent == 0 {
		t.Error("RFC 6349 window shows no bytes sent")
	}

	if d.Latency == nil || len(d.Latency.Samples) == 0 || d.Latency.RTTMs.N == 0 {
		t.Error("no latency under load samples")
	}
	if d.RPM == nil || !(d.RPM.RPM > 0) {
		t.Errorf("RPM %+v, want > 0", d.RPM)
	}
	lat := 0.0
	if d.Latency != nil {
		lat = d.Latency.RTTMs.P50
	}
	rpm := 0.0
	if d.RPM != nil {
		rpm = d.RPM.RPM
	}
	t.Logf("%s: %.2f Gbit/s, RFC 6349 MTU %d MSS %d efficiency %.2f%%, loaded RTT median %.3f ms, RPM %.0f",
		dir, d.GoodputBps/1e9, rfc.PathMTU, rfc.MSS, rfc.EfficiencyPct, lat, rpm)
}

func hasNote(notes []string, substr string) bool {
	for _, n := range notes {
		if strings.Contains(n, substr) {
			return true
		}
	}
	return false
}
