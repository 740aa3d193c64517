package tcprun

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
	"github.com/sonde-project/sonde/internal/units"
)

// Run runs the configured tests one after the other, each on a new upload
// stream, and returns one result per test, in order. A test that cannot
// run (its stream refused, a socket option missing) is an ERROR with the
// reason and the next test still runs; err is only for a configuration
// that cannot run at all. When ctx ends, the test running stops with
// what it measured so far and the rest are not run.
func Run(ctx context.Context, c Config) ([]model.MBMTest, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	ssai := -1
	if s, err := c.Sysctl("net.ipv4.tcp_slow_start_after_idle"); err == nil {
		if v, err := strconv.Atoi(s); err == nil {
			ssai = v
		}
	}
	var out []model.MBMTest
	for _, id := range c.Tests {
		if ctx.Err() != nil {
			break
		}
		r := &runner{cfg: c, id: id, ssai: ssai, attempt: 1}
		t := r.run(ctx)
		// 8.1.2 whose window the receiver did not bound to W: again, with
		// a buffer corrected by the window read back.
		for r.retryBuffer > 0 && r.attempt < maxWindowAttempts && ctx.Err() == nil {
			c.Logger.Info("mbm tcp: the window missed W; again with a corrected receive buffer", "test", id, "reason", t.Reason, "rcvbuf", r.retryBuffer)
			r = &runner{cfg: c, id: id, ssai: ssai, attempt: r.attempt + 1, buffer: r.retryBuffer}
			t = r.run(ctx)
		}
		out = append(out, t)
	}
	return out, nil
}

// runner is one test.
type runner struct {
	cfg  Config
	id   string
	ssai int

	tcp model.MBMTCP
	rc  syscall.RawConn
	// growthRetrans is the retransmissions from the stream's start to
	// the last sample, for a rate shortfall's reason.
	growthRetrans int64
	// frameOverhead is the share of the bytes written that are frame
	// headers, not payload.
	frameOverhead float64

	// 8.1.2: attempt is the session's number (1: the server's buffer
	// rule), buffer the SO_RCVBUF asked for (0: the server's rule), ws
	// the windowed stream; retryBuffer, if set, is the buffer the next
	// attempt asks for. growthSndWnd and growthInFlight are the growth
	// period's largest window read back and packets in flight; srtt the
	// latest smoothed RTT; perRTT the test period's delivery check.
	attempt, buffer, retryBuffer int
	ws                           *WindowedStream
	growthSndWnd, growthInFlight int64
	srtt                         time.Duration
	perRTT                       PerRTT
}

// result is a test's outcome before it becomes a model.MBMTest.
type result struct {
	verdict model.MBMVerdict
	reason  string
}

func (r *runner) run(ctx context.Context) model.MBMTest {
	t := model.MBMTest{ID: r.id, Name: testName[r.id], Transport: "tcp", TCP: &r.tcp}
	r.tcp.SlowStartAfterIdle = r.ssai
	r.tcp.SampleIntervalMs = ms(r.cfg.SampleInterval)
	r.tcp.WindowS = r.cfg.RateWindow.Seconds()
	res, sprt := r.measure(ctx)
	if r.ws != nil {
		res = r.endWindowed(res)
	}
	t.Verdict, t.Reason = res.verdict, res.reason
	if sprt != nil {
		t.Packets, t.Marks = sprt.Packets(), sprt.Marks()
		t.CE = min(r.tcp.CE, t.Marks) // marks are fed CE and losses together
		t.Losses = t.Marks - t.CE
		if t.Packets > 0 {
			t.Loss = float64(t.Marks) / float64(t.Packets)
		}
	}
	t.LossLow, t.LossHigh = mbm.Wilson(t.Marks, t.Packets) // 0 to 1 without a packet
	return t
}

// measure opens the stream, runs the pattern and the sampling, and
// returns the verdict and the SPRT (nil if the test period never began).
func (r *runner) measure(ctx context.Context) (result, *mbm.SPRT) {
	errorf := func(format string, a ...any) (result, *mbm.SPRT) {
		return result{model.MBMError, fmt.Sprintf(format, a...)}, nil
	}
	var conn net.Conn
	var err error
	if r.id == TestWindowed {
		if r.ws, err = r.openWindowed(ctx); err != nil {
			return errorf("%v", err)
		}
		conn = r.ws
		// The server closes the connection at its grant: end there.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.ws.Reply.DurationS*float64(time.Second)))
		defer cancel()
	} else if conn, err = r.cfg.Streams.OpenUpload(ctx, "mbm-"+strings.ReplaceAll(r.id, ".", "-")); err != nil {
		return errorf("%v", err)
	}
	defer conn.Close()
	if r.rc, err = tcpinfo.RawConn(conn); err != nil {
		return errorf("the upload stream is not a TCP socket: %v", err)
	}
	if r.tcp.CongestionControl, err = setCongestion(r.rc, r.cfg.CongestionControl); err != nil {
		return errorf("%v", err)
	}
	first, err := tcpinfo.Read(r.rc, 0)
	if err != nil {
		return errorf("%v", err)
	}
	r.tcp.MSS = int(first.SndMSS)
	// n counts delivered segments: they must be the target's packets,
	// within 1 % above (the timestamp option not negotiated, see
	// ClampMSS) and 10 % below (options, a smaller path MTU).
	if pl := r.payload(); 100*r.tcp.MSS > 101*pl || 10*r.tcp.MSS < 9*pl {
		return errorf("the stream's MSS is %d bytes, not the target's packet payload %d (MTU %d − %d): its segments are not the target's packets (clamp the MSS: Server.MSS)",
			r.tcp.MSS, pl, r.cfg.Plan.MTU, r.cfg.Plan.HeaderOverhead)
	}

	wctx, stop := context.WithCancel(ctx)
	var w writer
	switch r.id {
	case TestPaced:
		err = r.setupPaced(&w)
	case TestWindowed:
		err = r.setupWindowed(&w)
	case TestBurst:
		p := r.cfg.Plan
		err = r.setupBurst(&w, int64(math.Ceil(float64(p.W)*r.cfg.Derate)), time.Duration(float64(p.RTT)*r.cfg.Derate))
		r.tcp.Derate = r.cfg.Derate
	case TestSenderBurst:
		// Spaced so that the mean rate is the target's.
		b := r.cfg.SenderBurst
		err = r.setupBurst(&w, b, time.Duration(float64(b)*float64(r.payload())*8/r.cfg.Plan.RateBps*1e9))
	}
	if err != nil {
		stop()
		return errorf("%v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.run(wctx, conn)
	}()
	res, sprt := r.sample(ctx, &w, CountersOf(first, 0))
	stop()
	// Unblock a write held by a full socket, then wait for the writer:
	// its schedule is part of the result.
	_ = conn.SetWriteDeadline(time.Unix(1, 0))
	wg.Wait()
	w.fill(&r.tcp)
	return r.windowVerdict(r.conform(res, sprt)), sprt
}

// payload is the target packet's payload: the pattern is in the target's
// packets (the socket's MSS is recorded beside it).
func (r *runner) payload() int { return r.cfg.Plan.MTU - r.cfg.Plan.HeaderOverhead }

// setupPaced sets the pacing rate and the writer of 8.1.1: frames of
// about 5 ms of data, written as fast as the socket takes them.
func (r *runner) setupPaced(w *writer) error {
	rate := r.cfg.Plan.RateBps
	frame := int(math.Round(rate / 8 * 0.005))
	frame = max(4<<10, min(frame, 256<<10))
	// The kernel paces the payload it sends; the stream's frame headers
	// are payload to it, so the pacing rate carries them on top of the
	// target's payload rate.
	r.frameOverhead = float64(protocol.HeaderLen) / float64(frame+protocol.HeaderLen)
	bytesPerSec := uint32(math.Ceil(rate / 8 / (1 - r.frameOverhead)))
	got, err := setPacing(r.rc, bytesPerSec)
	if err != nil {
		return err
	}
	if got != bytesPerSec {
		return fmt.Errorf("SO_MAX_PACING_RATE set to %d B/s reads back %d B/s: the kernel does not pace", bytesPerSec, got)
	}
	r.tcp.PacingRateBps = float64(got) * 8 * (1 - r.frameOverhead)
	// Enough unsent data to ride out ~25 ms of a stalled writer, little
	// enough that the stream stops soon after a decision.
	lowat := max(128<<10, min(int(rate/8*0.025), 2<<20))
	if err := setNotsentLowat(r.rc, lowat); err != nil {
		return err
	}
	w.payload = frame
	return nil
}

// setupBurst sets the writer of a burst test: unpaced writes of burst
// target packets every head. 8.5.1: W·derate packets every RTT·derate
// (mean rate W·MSS/RTT ≥ the target rate, as W is rounded up); 8.4:
// SenderBurst packets, spaced for the target's mean rate.
func (r *runner) setupBurst(w *writer, burst int64, head time.Duration) error {
	if head < MinHeadway {
		return fmt.Errorf("a burst of %d packets every %s: the headway is below %s, which this host's timers cannot keep", burst, head, MinHeadway)
	}
	bytes := burst * int64(r.payload())
	if bytes-protocol.HeaderLen > protocol.MaxPayload || bytes <= protocol.HeaderLen {
		return fmt.Errorf("burst of %d packets (%d bytes): want more than %d and at most %d bytes per write", burst, bytes, protocol.HeaderLen, protocol.MaxPayload)
	}
	r.tcp.BurstPackets, r.tcp.HeadwayMs = burst, ms(head)
	r.frameOverhead = float64(protocol.HeaderLen) / float64(bytes)
	// A whole burst must fit unsent in the socket at once.
	if err := setNotsentLowat(r.rc, int(max(bytes*2, 128<<10))); err != nil {
		return err
	}
	w.payload, w.headway, w.burst = int(bytes)-protocol.HeaderLen, head, burst
	w.room = func(n int64) bool {
		s, err := tcpinfo.Read(r.rc, 0)
		return err == nil && int64(s.SndCwnd)-int64(s.Unacked) >= n
	}
	return nil
}

// sample reads TCP_INFO every SampleInterval through the growth and test
// periods and returns the verdict (before the pattern's conformance is
// checked) and the SPRT.
func (r *runner) sample(ctx context.Context, w *writer, first Counters) (result, *mbm.SPRT) {
	cfg := r.cfg
	target := cfg.Plan.RateBps
	need := cfg.Precondition * target
	win := NewRateWindow(cfg.RateWindow)
	var (
		acc       Accountant
		sprt      *mbm.SPRT
		t0        = time.Now()
		testStart Counters
		last      Counters
		// Test-period samples with no unsent data, and with cwnd below
		// a burst.
		emptyN, belowN int
		prevT          time.Duration
		minRate        = math.Inf(1)
		interval       = cfg.SampleInterval
	)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	finish := func(res result) (result, *mbm.SPRT) {
		// The schedule of the test period (of the growth period if the
		// test never began).
		from := testStart
		if !acc.Started() {
			from = Counters{}
		}
		r.tcp.Writes, r.tcp.MissedHeadways = last.Writes-from.Writes, last.Missed-from.Missed
		if n := last.Writes - from.Writes; n > 0 && r.tcp.BurstPackets > 0 {
			r.tcp.WholeBurstsPct = 100 * float64(last.WholeWrites-from.WholeWrites) / float64(n)
		}
		if acc.Started() {
			if sprt.Decision() == mbm.Continue {
				acc.Flush(sprt)
			}
			r.tcp.TestS = (last.T - testStart.T).Seconds()
			r.tcp.Delivered, r.tcp.Retrans, r.tcp.DSACKDups, r.tcp.CE = acc.Delivered, acc.Retrans, acc.DSACK, acc.CE
			r.tcp.CounterResets = acc.Resets
			if r.tcp.TestS > 0 && last.BytesAcked >= testStart.BytesAcked {
				r.tcp.GoodputBps = float64(last.BytesAcked-testStart.BytesAcked) * 8 * (1 - r.frameOverhead) / r.tcp.TestS
			}
			r.tcp.RwndLimitedPct, r.tcp.SndbufLimitedPct, _ = limits(testStart, last, nil)
			if n := float64(r.tcp.Samples); n > 0 {
				r.tcp.NotsentEmptyPct = 100 * float64(emptyN) / n
				if r.tcp.BurstPackets > 0 {
					r.tcp.CwndBelowBurstPct = 100 * float64(belowN) / n
				}
			}
		} else {
			r.tcp.GrowthS = last.T.Seconds()
			if r.id == TestWindowed { // the growth period's readback
				r.tcp.MaxSndWndBytes, r.tcp.MaxInFlight = r.growthSndWnd, r.growthInFlight
			}
		}
		if !math.IsInf(minRate, 1) {
			r.tcp.MinWindowRateBps = minRate
		}
		return res, sprt
	}
	for {
		select {
		case <-ctx.Done():
			return finish(result{model.MBMError, fmt.Sprintf("interrupted after %.1f s (%v); the counts so far are kept", time.Since(t0).Seconds(), context.Cause(ctx))})
		case <-w.done():
			return finish(result{model.MBMError, fmt.Sprintf("the upload stream failed: %v", w.error())})
		case <-tick.C:
		}
		now := time.Since(t0)
		smp, err := tcpinfo.Read(r.rc, now.Seconds())
		if err != nil {
			return finish(result{model.MBMError, err.Error()})
		}
		c := CountersOf(smp, now)
		c.Writes, c.WholeWrites, c.Missed = w.nWrites.Load(), w.nWhole.Load(), w.nMissed.Load()
		if gap := now - prevT; prevT > 0 && ms(gap) > r.tcp.MaxSampleGapMs {
			r.tcp.MaxSampleGapMs = ms(gap)
		}
		prevT, last = now, c
		if d, ok := delta(c.TotalRetrans, first.TotalRetrans); ok {
			r.growthRetrans = d
		}
		r.srtt = time.Duration(smp.RTTUs) * time.Microsecond
		if r.id == TestWindowed {
			if !acc.Started() {
				r.growthSndWnd, r.growthInFlight = max(r.growthSndWnd, int64(smp.SndWnd)), max(r.growthInFlight, int64(smp.Unacked))
			} else {
				r.tcp.MaxSndWndBytes, r.tcp.MaxInFlight = max(r.tcp.MaxSndWndBytes, int64(smp.SndWnd)), max(r.tcp.MaxInFlight, int64(smp.Unacked))
				r.perRTT.Add(now-testStart.T, smp.Delivered, r.srtt)
			}
		}
		// Sample at most every half of the path's own RTT too.
		if half := time.Duration(smp.MinRTTUs) * time.Microsecond / 2; smp.MinRTTUs > 0 && half >= MinSampleInterval && half < interval {
			interval = half
			tick.Reset(interval)
			r.tcp.SampleIntervalMs = ms(interval)
		}
		win.Add(c)
		rate, full := win.Rate()
		rate *= 1 - r.frameOverhead // payload, as the target is
		if !acc.Started() {
			// A burst test's pattern is produced once TCP's window lets
			// the bursts leave whole.
			if now >= cfg.MinGrowth && full && rate >= need && (r.tcp.BurstPackets == 0 || win.Whole() >= minWhole) {
				r.tcp.GrowthS = now.Seconds()
				if res, bad := r.growthWindow(false); bad {
					return finish(res)
				}
				// Count each interval once its spurious retransmissions'
				// DSACKs can have come back: an RTT and a half (the larger
				// of the target's and the flow's smoothed RTT) and two
				// samples.
				rtt := max(cfg.Plan.RTT, time.Duration(smp.RTTUs)*time.Microsecond)
				acc.Start(c, rtt*3/2+2*interval)
				r.tcp.HoldMs = ms(rtt*3/2 + 2*interval)
				testStart = c
				sprt = cfg.Plan.NewSPRT()
				cfg.Logger.Info("mbm tcp: growth period over", "test", r.id, "after_s", now.Seconds(), "rate_bps", rate)
				continue
			}
			if now >= cfg.MaxGrowth {
				if full {
					minRate = rate
				}
				if res, bad := r.growthWindow(true); bad {
					return finish(res)
				}
				if full && rate >= need {
					return finish(r.heldBursts(win.Whole()))
				}
				res, _ := r.shortfall(win, rate, full, "in the growth period (max "+cfg.MaxGrowth.String()+")")
				return finish(res)
			}
			continue
		}
		if full {
			minRate = min(minRate, rate)
		}
		r.tcp.Samples++
		if c.NotsentBytes == 0 {
			emptyN++
		}
		if int64(c.Cwnd) < r.tcp.BurstPackets {
			belowN++
		}
		st := acc.Add(c)
		if st.Reset {
			cfg.Logger.Warn("mbm tcp: a TCP_INFO counter went backwards; that interval is not counted", "test", r.id)
		}
		switch Feed(sprt, st) {
		case mbm.Pass:
			return finish(result{model.MBMPass, fmt.Sprintf("%d packets delivered with %d marks: the mark rate is at most p0 = %.4g (SPRT)", sprt.Packets(), sprt.Marks(), cfg.Plan.P0)})
		case mbm.Fail:
			return finish(result{model.MBMFail, fmt.Sprintf("%d marks in %d packets (%d retransmissions − %d DSACK duplicates, %d CE): the mark rate is at least p1 = %.4g (SPRT)", sprt.Marks(), sprt.Packets(), acc.Retrans, acc.DSACK, acc.CE, cfg.Plan.P1)})
		case mbm.Inconclusive:
			return finish(result{model.MBMInconclusive, fmt.Sprintf("no decision after %d packets (%d marks), the truncation point", sprt.Packets(), sprt.Marks())})
		}
		if full && rate < need {
			if res, stop := r.shortfall(win, rate, true, "in the test period"); stop {
				return finish(res)
			}
			// Not the path's capacity: measure on, and judge the test
			// period's goodput at the end (conform).
			if r.tcp.DipSamples == 0 {
				cfg.Logger.Warn("mbm tcp: the rate dipped below the precondition without the window holding the flow back", "test", r.id, "rate_bps", rate)
			}
			r.tcp.DipSamples++
		}
		if now-testStart.T >= cfg.MaxTest {
			return finish(result{model.MBMInconclusive, fmt.Sprintf("no decision after %d packets (%d marks) in the test period's limit of %s", sprt.Packets(), sprt.Marks(), cfg.MaxTest)})
		}
	}
}

// shortfall explains a rate below the precondition: the host (the
// receiver's window, the sender's buffer, an application that did not
// keep the socket supplied) gives ERROR, since the pattern was not
// produced. A paced flow that the congestion window did not hold back
// (in flight below cwnd) sent less than its pacing rate or had its
// acknowledgements stalled: the path took all it was given, so this is
// no evidence of its capacity (INCONCLUSIVE, and stop is false: a test
// period measures on). Otherwise the path could not carry the rate: the
// flow was window-limited, by losses or a queue (FAIL). stop says whether
// the test ends on it.
func (r *runner) shortfall(win *RateWindow, rate float64, full bool, when string) (res result, stop bool) {
	cfg := r.cfg
	target := cfg.Plan.RateBps
	if !full {
		return result{model.MBMError, fmt.Sprintf("no whole %s window of samples %s: the host's sampling stalled", cfg.RateWindow, when)}, true
	}
	rwnd, sndbuf, empty := win.Limits()
	cwndLim := win.CwndLimited()
	cfg.Logger.Debug("mbm tcp: rate shortfall", "test", r.id, "rate_bps", rate, "rwnd_pct", rwnd, "sndbuf_pct", sndbuf, "notsent_empty_pct", empty, "cwnd_limited_pct", cwndLim)
	head := fmt.Sprintf("rate %s over %s %s, below %.2g × the target %s", units.FormatRatePrecise(rate), cfg.RateWindow, when, cfg.Precondition, units.FormatRatePrecise(target))
	if r.id == TestWindowed {
		// The receiver's window limits the flow by design: only the
		// sender's buffer or an idle writer are the host's.
		switch {
		case sndbuf >= 50:
			return result{model.MBMError, fmt.Sprintf("%s: the sender's buffer limited the flow in %.0f %% of busy time, not the path", head, sndbuf)}, true
		case empty >= 50:
			return result{model.MBMError, fmt.Sprintf("%s: the sender did not keep data queued in %.0f %% of samples (the host could not produce the pattern)", head, empty)}, true
		}
		if cwndLim >= 50 {
			return result{model.MBMFail, fmt.Sprintf("%s: the congestion window held the flow below the window of %d packets in %.0f %% of samples (%d retransmissions from the start): the path's losses keep it from carrying the target rate",
				head, cfg.Plan.W, cwndLim, r.growthRetrans)}, true
		}
		if fit, why := fitWindow(max(r.growthSndWnd, r.tcp.MaxSndWndBytes), max(r.growthInFlight, r.tcp.MaxInFlight), cfg.Plan.W, r.tcp.MSS); fit == windowSmall {
			return result{model.MBMError, fmt.Sprintf("%s: %s, and the congestion window did not hold the flow (%.0f %% of samples): the pattern was not produced", head, why, cwndLim)}, true
		}
		return result{model.MBMFail, fmt.Sprintf("%s: the window of %d packets at the path's smoothed RTT of %.1f ms (target %.1f ms) cannot carry the target rate: the path's round trip, with its queue, is too long for the target",
			head, cfg.Plan.W, ms(r.srtt), ms(cfg.Plan.RTT))}, true
	}
	switch {
	case rwnd+sndbuf >= 50:
		return result{model.MBMError, fmt.Sprintf("%s: the hosts limited the flow, not the path (receiver's window %.0f %%, sender's buffer %.0f %% of busy time)", head, rwnd, sndbuf)}, true
	case empty >= 50:
		return result{model.MBMError, fmt.Sprintf("%s: the sender did not keep data queued in %.0f %% of samples (the host could not produce the pattern)", head, empty)}, true
	case r.tcp.BurstPackets == 0 && cwndLim < 50:
		return result{model.MBMInconclusive, fmt.Sprintf("%s, but the congestion window held the flow back in only %.0f %% of samples: the sending host's pacing or stalled acknowledgements, not the path's capacity", head, cwndLim)}, false
	}
	lost := ""
	if r.growthRetrans > 0 {
		lost = fmt.Sprintf(" (%d retransmissions from the start)", r.growthRetrans)
	}
	return result{model.MBMFail, fmt.Sprintf("%s: the path cannot carry the target rate (window-limited in %.0f %% of samples)%s", head, cwndLim, lost)}, true
}

// minWhole is the share of bursts that must leave whole (cwnd − in
// flight ≥ the burst when it is written) for the pattern to count as
// produced.
const minWhole = 0.9

// heldBursts explains a burst test that kept the rate but whose bursts
// TCP's window did not let leave whole by the end of the growth period.
// If the path dropped packets meanwhile, its losses kept the window down:
// the path cannot carry the bursts (FAIL, as for a rate the path cannot
// carry). Without a loss it is TCP on this host that spread them (ERROR).
func (r *runner) heldBursts(whole float64) result {
	head := fmt.Sprintf("only %.0f %% of the %d-packet bursts in the last %s could leave whole (cwnd − in flight < burst) by the end of the growth period (%s)",
		100*whole, r.tcp.BurstPackets, r.cfg.RateWindow, r.cfg.MaxGrowth)
	if r.growthRetrans > 0 {
		return result{model.MBMFail, fmt.Sprintf("%s, and the path dropped packets (%d retransmissions): its losses keep TCP's window below the bursts, the path cannot carry them", head, r.growthRetrans)}
	}
	return result{model.MBMError, head + ", without a loss: TCP on this host did not open its window to the bursts (a larger initcwnd on the route lets it start there); the pattern was not produced"}
}

// conform checks the pattern the sender produced: a verdict on a pattern
// the host did not produce is no verdict on the path.
func (r *runner) conform(res result, sprt *mbm.SPRT) result {
	tc := &r.tcp
	var notes []string
	if tc.BurstPackets > 0 {
		if tc.Writes > 0 && float64(tc.MissedHeadways) > 0.05*float64(tc.Writes+tc.MissedHeadways) {
			return result{model.MBMInconclusive, fmt.Sprintf("the sender missed %d of %d burst headways (host timing, largest lateness %.1f ms): the pattern was not produced (the measurement: %s, %s)",
				tc.MissedHeadways, tc.Writes+tc.MissedHeadways, tc.MaxLatenessMs, res.verdict, res.reason)}
		}
		if res.verdict == model.MBMPass && tc.CwndBelowBurstPct > 10 {
			return result{model.MBMInconclusive, fmt.Sprintf("cwnd was below the burst of %d packets in %.0f %% of samples: the bursts did not leave whole, so the PASS is not one for this burst size", tc.BurstPackets, tc.CwndBelowBurstPct)}
		}
		if tc.SlowStartAfterIdle == 1 {
			notes = append(notes, "tcp_slow_start_after_idle is 1 on the sender: cwnd may collapse after an idle RTO between bursts")
		}
	}
	if res.verdict == model.MBMPass && tc.DipSamples > 0 && tc.GoodputBps < r.cfg.Precondition*r.cfg.Plan.RateBps {
		return result{model.MBMInconclusive, fmt.Sprintf("the test period's goodput %s is below %.2g × the target, with the congestion window not holding the flow back (the sending host's pacing or stalled acknowledgements): the pattern was not sustained (the SPRT had PASS)",
			units.FormatRatePrecise(tc.GoodputBps), r.cfg.Precondition)}
	}
	if tc.DipSamples > 0 {
		notes = append(notes, fmt.Sprintf("the window rate dipped below %.2g × the target in %d samples without the congestion window holding the flow back (host or acknowledgement stalls)", r.cfg.Precondition, tc.DipSamples))
	}
	if tc.BurstPackets > 0 && res.verdict == model.MBMPass && tc.WholeBurstsPct < 100*minWhole {
		return result{model.MBMInconclusive, fmt.Sprintf("only %.0f %% of the bursts could leave whole in the test period: the PASS is not one for this burst size", tc.WholeBurstsPct)}
	}
	if tc.BurstPackets > 0 && tc.Writes > 0 && tc.WholeBurstsPct >= 100*minWhole {
		// The check passed, but it is of the writes and the window when
		// each was written; the kernel may still pace a burst out (its
		// internal pacing, TSO autosizing), which only a capture would
		// show.
		notes = append(notes, fmt.Sprintf("bursts written whole (%.0f %% with the window open for all %d packets); on-the-wire shape not observed by the sender", tc.WholeBurstsPct, tc.BurstPackets))
	}
	// Between bursts the socket is empty by design: only a paced test
	// must keep data queued.
	if tc.BurstPackets == 0 && res.verdict == model.MBMPass && tc.NotsentEmptyPct > 50 {
		return result{model.MBMInconclusive, fmt.Sprintf("the sender had no data queued in %.0f %% of samples: the pattern was not sustained by the host", tc.NotsentEmptyPct)}
	}
	if tc.CongestionControl == "bbr" && tc.PacingRateBps > 0 {
		notes = append(notes, "BBR's own pacing gains move a paced flow below its rate at times")
	}
	if len(notes) > 0 {
		res.reason += "; " + strings.Join(notes, "; ")
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
