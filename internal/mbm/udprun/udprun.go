// Package udprun runs RFC 8337's tests over UDP against a sonde server's
// MBM sink (docs/mbm.md, docs/mbm-protocol.md): a sender on absolute
// deadlines (open loop, but for 8.1.2's window) produces each test's pattern (growth period, then
// the test period), the server's feedback gives every packet's fate, and
// the SPRT of internal/mbm, fed per packet in send order, stops the test
// as soon as it decides. The sender checks its own schedule: a pattern it
// could not produce gives ERROR or INCONCLUSIVE, never a verdict on the
// path. The closed-loop tests (8.2.1 to 8.2.4 from one standing queue
// scan, 8.3.2's slowstart rounds: loop.go, scan.go, aqm.go) steer by the
// server's per-arrival feedback instead of a fixed schedule.
package udprun

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pace"
	"github.com/sonde-project/sonde/internal/stamp"
	"github.com/sonde-project/sonde/internal/units"
)

// Defaults of Config.
const (
	DefaultMinRateFraction = 0.9
	DefaultBurstPackets    = 44 // one 64 KB TSO/GSO segment of 1448-byte payloads
	// udpIPOverhead is the IPv4 and UDP headers: a datagram of MTU − 28
	// payload bytes is an MTU-sized IP packet.
	udpIPOverhead = 28
	// spinWindow is how long before a deadline the sender stops sleeping
	// and spins (the stamp sender's figure).
	spinWindow = 200 * time.Microsecond
	// missedShare is the share of deadlines missed beyond which a pattern
	// counts as not produced: each miss moves the schedule (no catch-up
	// burst), so a few only cost rate; many mean a host too busy to keep
	// the pattern's timing.
	missedShare = 0.05
	// rateWindow is the shortest sliding window of the rate precondition
	// (4 target RTTs if longer): long enough that one scheduling stall of
	// a busy host does not fail it, short enough to see a rate that sags.
	rateWindow = time.Second
	// maxDurationS is the longest sending time a client asks for.
	maxDurationS = 86400
	// serverSilence ends a test whose server sent no feedback this long.
	serverSilence = 3 * time.Second
)

// Config is one run: the tests of a plan against one server.
type Config struct {
	Server, Token, Software string
	Insecure                bool
	// Plan is the model and the SPRT (mbm.NewPlan).
	Plan mbm.Plan
	// Tests are RFC 8337 section IDs (Tests lists them).
	Tests []string
	// Derate is 8.5.1's (0 < derate ≤ 1); BurstPackets 8.4's burst size
	// (0: DefaultBurstPackets).
	Derate       float64
	BurstPackets int64
	// MinRateFraction is the precondition: the sustained rate must reach
	// this share of the target (0: DefaultMinRateFraction).
	MinRateFraction float64
	// ECN sends ECT(0), so that a path's AQM can mark instead of drop.
	ECN bool
	// Progress, if set, is told each test's start.
	Progress func(test string)
}

// ErrNoMBM is the reply of a server without the MBM sink.
var ErrNoMBM = errors.New("server does not support MBM")

// Run runs every test in turn. A test the server refused to open ends
// the run with the error; a server gone mid-test gives that test ERROR
// with what was measured so far, and the error.
func Run(ctx context.Context, cfg Config) ([]model.MBMTest, error) {
	if cfg.MinRateFraction == 0 {
		cfg.MinRateFraction = DefaultMinRateFraction
	}
	if cfg.BurstPackets == 0 {
		cfg.BurstPackets = DefaultBurstPackets
	}
	if err := Validate(cfg); err != nil {
		return nil, err
	}
	var pats []pattern
	for _, id := range cfg.Tests {
		if closedLoop(id) {
			continue
		}
		pt, err := newPattern(id, cfg.Plan, cfg.Derate, cfg.BurstPackets)
		if err != nil {
			return nil, err
		}
		pats = append(pats, pt)
	}
	var tlsCfg *tls.Config
	if cfg.Insecure {
		tlsCfg = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure asks for it
	}
	api, err := apiclient.New(cfg.Server, cfg.Token, cfg.Software, tlsCfg)
	if err != nil {
		return nil, err
	}
	defer api.Close()
	var out []model.MBMTest
	scanned := false
	for _, id := range cfg.Tests {
		if scanned && isScan(id) {
			continue // one scan gave every 8.2 test asked for
		}
		if cfg.Progress != nil {
			cfg.Progress(id)
		}
		var ts []model.MBMTest
		var err error
		switch {
		case isScan(id):
			scanned = true
			ts, err = runScan(ctx, api, cfg)
		case id == TestAQM:
			ts, err = runAQM(ctx, api, cfg)
		default:
			var t *model.MBMTest
			t, err = runTest(ctx, api, cfg, pats[0])
			pats = pats[1:]
			if t != nil {
				ts = []model.MBMTest{*t}
			}
		}
		out = append(out, ts...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// test is one running test's shared state: the sender writes sent, the
// feedback reader the SPRT.
type test struct {
	cfg    Config
	pt     pattern
	growth int64
	sprt   *mbm.SPRT

	mu     sync.Mutex
	next   int64 // the next packet whose fate the SPRT has not seen
	losses int64
	ce     int64
	lastFB atomic.Int64 // when the last feedback came, Unix ns (0: none yet)
	// allLost are the packets final and lost, growth included; acked
	// those reported arrived or final and lost: what left the window.
	allLost    int64
	acked      atomic.Int64
	windowWait time.Duration // the sender's time waiting for the window
	gaps       int64         // feedback windows that skipped packets
	decided    atomic.Bool
	sent       atomic.Int64
	// sendErrors are packets the host refused to send (ENOBUFS and the like).
	sendErrors atomic.Int64
}

// observe feeds packets next … First+Count−1 of a feedback to the SPRT,
// in send order; packets of the growth period are not counted.
func (t *test) observe(f *mbmwire.Feedback) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastFB.Store(time.Now().UnixNano())
	defer func() { t.acked.Store(int64(f.Received) + t.allLost) }()
	end := int64(f.First) + int64(f.Count)
	if t.next < int64(f.First) {
		if f.Count == mbmwire.MaxFeedbackPackets { // a timer feedback's full window
			t.gaps++ // the end report fills it
		}
		return
	}
	for ; t.next < end; t.next++ {
		arrived, ce := f.Fate(uint32(t.next - int64(f.First)))
		if !arrived {
			t.allLost++
		}
		t.count(t.next, arrived, ce)
	}
}

// count feeds packet seq's fate to the SPRT (t.mu held).
func (t *test) count(seq int64, arrived, ce bool) {
	if seq < t.growth || t.sprt.Decision() != mbm.Continue {
		return
	}
	if !arrived {
		t.losses++
	} else if ce {
		t.ce++
	}
	if t.sprt.Observe(!arrived || ce) != mbm.Continue {
		t.decided.Store(true)
	}
}

func runTest(ctx context.Context, api *apiclient.Client, cfg Config, pt pattern) (*model.MBMTest, error) {
	p := cfg.Plan
	size := p.MTU - udpIPOverhead
	// Growth: two windows' worth, in whole bursts; nothing is counted.
	growth := (max(2*p.W, 16) + pt.Burst - 1) / pt.Burst * pt.Burst
	planned := growth + p.MaxPackets
	bursts := (planned + pt.Burst - 1) / pt.Burst
	// In float seconds: a plan's truncation point times a slow pattern
	// can pass what a time.Duration holds. The server cuts it further.
	durationS := math.Min(float64(bursts)*pt.Headway.Seconds(), maxDurationS)
	lossTimeout := max(4*p.RTT, 200*time.Millisecond)
	reorder := int(min(max(p.W, 16), mbmwire.MaxReorderPackets))
	req := mbmwire.SessionRequest{
		Client: cfg.Software, Test: pt.ID, RateBps: pt.Rate, PacketBytes: size,
		TargetRTTMs: float64(p.RTT) / 1e6, TargetMTU: p.MTU, DurationS: max(durationS, 0.001),
		Packets: min(planned, mbmwire.MaxPackets), ReorderPackets: reorder, LossTimeoutMs: math.Min(float64(lossTimeout)/1e6, mbmwire.MaxLossTimeoutMs),
	}
	if pt.Window > 0 {
		req.FeedbackPackets = 1 // an ACK per packet clocks the window
		// A loss leaves the window once 3 later packets arrived (TCP's
		// duplicate ACKs), which the window lets through.
		req.ReorderPackets = int(min(3, max(1, pt.Window-1)))
	}
	var rep mbmwire.SessionReply
	if err := api.Call(ctx, http.MethodPost, mbmwire.PathSessions, req, &rep); err != nil {
		var se *apiclient.StatusError
		if errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed) {
			return nil, fmt.Errorf("%s: %w", api.Base.Host, ErrNoMBM)
		}
		return nil, fmt.Errorf("test %s: %w", pt.ID, err)
	}
	if rep.Packets < 1 || rep.Packets > req.Packets || rep.Port < 1 || rep.Port > 65535 || !(rep.DurationS > 0 && rep.DurationS <= req.DurationS) {
		return nil, fmt.Errorf("test %s: the server granted %d packets for %g s on port %d: not a valid grant", pt.ID, rep.Packets, rep.DurationS, rep.Port)
	}
	granted := time.Duration(rep.DurationS * float64(time.Second))
	res := &model.MBMTest{ID: pt.ID, Name: pt.Name, Transport: "udp", UDP: &model.MBMUDP{Pattern: patternText(pt),
		Derate: pt.Derate, BurstPackets: pt.Burst, GrowthPackets: growth, MinRateFraction: cfg.MinRateFraction}}
	t := &test{cfg: cfg, pt: pt, growth: growth, sprt: p.NewSPRT()}
	conn, err := net.Dial("udp", net.JoinHostPort(api.Base.Hostname(), fmt.Sprint(rep.Port)))
	if err != nil {
		return errorResult(res, t, fmt.Sprintf("UDP socket to the server: %v", err)), fmt.Errorf("test %s: %w", pt.ID, err)
	}
	uc := conn.(*net.UDPConn)
	defer uc.Close()
	_ = uc.SetWriteBuffer(4 << 20)
	_ = uc.SetReadBuffer(4 << 20)
	if cfg.ECN {
		_ = ipv4.NewConn(uc).SetTOS(0x02) // ECT(0)
	}
	readDone := make(chan struct{})
	go func() { defer close(readDone); t.readFeedback(uc, rep.Token) }()

	limit := rep.Packets
	truncated := limit < planned || rep.DurationS < durationS
	start := time.Now().Add(5 * time.Millisecond)
	// The log's memory and the sending time are bounded by the grant.
	log := newSchedLog(start, granted+time.Second, pt.tolerance())
	sendErr := t.send(ctx, uc, rep.Token, start, start.Add(granted), limit, size, log)
	sent := t.sent.Load()
	// Wait for the tail's fates unless the SPRT has decided: until the
	// feedback covers every packet sent, or the loss timeout has passed.
	if !t.decided.Load() && sendErr == nil {
		wait := time.Now().Add(lossTimeout + 3*time.Duration(rep.FeedbackMs*1e6))
		for time.Now().Before(wait) && ctx.Err() == nil {
			t.mu.Lock()
			done := t.next >= sent
			t.mu.Unlock()
			if done {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.mu.Lock()
	from := t.next
	t.mu.Unlock()
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var final mbmwire.Report
	end := mbmwire.EndRequest{Sent: sent, From: from}
	if d := t.sprt.Decision(); d != mbm.Continue {
		end.Verdict, end.Reason = d.Verdict(), "the client's SPRT, before its conformance checks"
	}
	endErr := api.Call(endCtx, http.MethodPost, mbmwire.PathSessions+"/"+rep.ID+"/end", end, &final)
	uc.Close()
	<-readDone
	if endErr == nil && (final.Sent != sent || final.From != from) {
		endErr = fmt.Errorf("the server's report covers %d packets from %d, want %d from %d", final.Sent, final.From, sent, from)
	}
	if endErr == nil {
		t.mu.Lock()
		for ; t.next < sent; t.next++ { // fates the feedback did not bring
			arrived, ce, ok := final.Fate(t.next)
			if !ok {
				break
			}
			t.count(t.next, arrived, ce)
		}
		t.mu.Unlock()
	}
	t.fill(res, log, sent)
	if endErr == nil {
		res.UDP.Reordered, res.UDP.Duplicates, res.UDP.Late = final.Reordered, final.Duplicates, final.Late
		res.UDP.ReceiverRateBps, res.UDP.ReceiverMinRateBps = final.RateBps, final.MinRateBps
	}
	switch {
	case sendErr != nil:
		return errorResult(res, t, fmt.Sprintf("sending stopped after %d packets: %v", sent, sendErr)), fmt.Errorf("test %s: %w", pt.ID, sendErr)
	case endErr != nil:
		return errorResult(res, t, fmt.Sprintf("server gone after %d packets (partial result): %v", sent, endErr)), fmt.Errorf("test %s: %w", pt.ID, endErr)
	}
	verdict(res, t, p, truncated)
	return res, nil
}

// send runs the pattern from start until limit packets are sent, the SPRT
// decides, the context ends or the server falls silent.
func (t *test) send(ctx context.Context, uc *net.UDPConn, token uint64, start, end time.Time, limit int64, size int, log *schedLog) error {
	pc := ipv4.NewPacketConn(uc)
	maxBatch := min(t.pt.Sub, 64)
	bufs := make([][]byte, maxBatch)
	msgs := make([]ipv4.Message, maxBatch)
	for i := range bufs {
		bufs[i] = make([]byte, size)
		msgs[i].Buffers = [][]byte{bufs[i]}
	}
	clk := stamp.NewClock()
	unpin := pace.PinThread()
	defer unpin()
	var seq int64
	var shift time.Duration // the schedule moved by late sends
	for seq < limit {
		if t.decided.Load() {
			return nil
		}
		off, n := t.pt.at(seq)
		n = min(n, limit-seq)
		deadline := start.Add(off + shift)
		if deadline.After(end) {
			return nil // the server's grant is over
		}
		if t.pt.Window > 0 && seq-t.acked.Load() >= t.pt.Window {
			if err := t.waitWindow(ctx, seq, start); err != nil {
				return err
			}
			// Held by the window, not late: the schedule moves on from now.
			if now := time.Now(); now.After(deadline) {
				shift += now.Sub(deadline)
				deadline = now
			}
		}
		if err := pace.WaitUntil(ctx, clk, deadline, spinWindow); err != nil {
			return err
		}
		at := time.Now()
		if late := at.Sub(deadline); late > log.tolerance {
			// A sender that catches up sends its missed packets back to
			// back: bursts the pattern does not have (catching up one
			// spacing put two bursts back to back). The rest of the
			// schedule moves by the whole lateness and keeps its shape;
			// the time lost shows in the sustained rate, which the
			// precondition checks, and the deadline counts as missed.
			shift += late
		}
		if last := t.lastFB.Load(); at.Sub(start) > serverSilence && (last == 0 || at.UnixNano()-last > int64(serverSilence)) {
			return fmt.Errorf("no feedback from the server for %s", serverSilence)
		}
		for k := int64(0); k < n; {
			b := min(n-k, int64(maxBatch))
			for i := int64(0); i < b; i++ {
				pos := uint32((seq + k + i) % t.pt.Burst)
				mbmwireData(bufs[i], token, seq+k+i, at, pos, uint32((seq+k+i)/t.pt.Burst))
			}
			w, err := pc.WriteBatch(msgs[:b], 0)
			if err != nil {
				if !isTransient(err) {
					return fmt.Errorf("send: %w", err)
				}
				// Lost on this host, before the path: counted apart, and
				// the pattern was not produced.
				w = max(w, 0)
				t.sendErrors.Add(b - int64(w))
				w = int(b)
			}
			k += int64(w)
		}
		log.sent(deadline, at, n, size+udpIPOverhead) // rates of IP packets, as the target's
		seq += n
		t.sent.Store(seq)
	}
	return nil
}

// waitWindow waits until packet seq fits the window: fewer than Window
// packets sent and not yet acknowledged by the feedback.
func (t *test) waitWindow(ctx context.Context, seq int64, start time.Time) error {
	t0 := time.Now()
	defer func() { t.windowWait += time.Since(t0) }()
	for seq-t.acked.Load() >= t.pt.Window {
		if t.decided.Load() {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		now := time.Now()
		if last := t.lastFB.Load(); now.Sub(start) > serverSilence && (last == 0 || now.UnixNano()-last > int64(serverSilence)) {
			return fmt.Errorf("no feedback from the server for %s", serverSilence)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

func isTransient(err error) bool {
	return errors.Is(err, errNoBufs) || errors.Is(err, errAgain) || errors.Is(err, errRefused)
}

// readFeedback applies the server's feedback until the socket closes.
func (t *test) readFeedback(uc *net.UDPConn, token uint64) {
	buf := make([]byte, mbmwire.FeedbackLen(mbmwire.MaxFeedbackPackets)+1)
	for {
		n, err := uc.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors while the server is starting or gone: the silence check ends the test
		}
		f, err := mbmwire.ParseFeedback(buf[:n])
		if err != nil || f.Token != token {
			continue
		}
		t.observe(&f)
	}
}

// fill writes the counts and the sender's log into res.
func (t *test) fill(res *model.MBMTest, log *schedLog, sent int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	res.UDP.PacketsSent = sent
	res.Packets, res.Marks = t.sprt.Packets(), t.sprt.Marks()
	res.Losses, res.CE = t.losses, t.ce
	if res.Packets > 0 {
		res.Loss = float64(res.Marks) / float64(res.Packets)
	}
	res.LossLow, res.LossHigh = mbm.Wilson(res.Marks, res.Packets)
	if d := t.sprt.Decision(); d == mbm.Pass || d == mbm.Fail {
		res.UDP.DecisionPackets = res.Packets
	}
	res.UDP.FeedbackGaps = t.gaps
	res.UDP.WindowPackets, res.UDP.WindowWaitMs = t.pt.Window, float64(t.windowWait)/1e6
	res.UDP.SendErrors = t.sendErrors.Load()
	win := max(rateWindow, 4*t.cfg.Plan.RTT)
	mean, least, used := log.rates(win, t.pt.Headway)
	res.UDP.SenderRateBps, res.UDP.SenderMinRateBps, res.UDP.RateWindowMs = mean, least, float64(used)/1e6
	res.UDP.Deadlines, res.UDP.MissedDeadlines = log.deadlines, log.missed
	res.UDP.ScheduleErrorP50Us, res.UDP.ScheduleErrorP99Us = log.quantile(0.5), log.quantile(0.99)
	res.UDP.ScheduleErrorMaxUs = float64(log.maxErr) / 1e3
	if !log.first.IsZero() {
		res.UDP.DurationMs = float64(log.last.Sub(log.start)+t.pt.Headway) / 1e6
	}
}

// verdict decides the test from the SPRT and the preconditions: a pattern
// the sender did not produce is ERROR (rate) or INCONCLUSIVE (timing),
// never a verdict on the path; a path that did not carry the rate FAILs.
func verdict(res *model.MBMTest, t *test, p mbm.Plan, truncated bool) {
	need := res.UDP.MinRateFraction * t.pt.Rate
	d := t.sprt.Decision()
	switch {
	case res.UDP.SenderMinRateBps < need && d != mbm.Fail && res.UDP.WindowWaitMs > 0 && res.UDP.SendErrors == 0 &&
		float64(res.UDP.MissedDeadlines) <= missedShare*float64(res.UDP.Deadlines):
		// The sender kept its schedule but for the window: the path's
		// round trip is too long for W packets to carry the target.
		res.Verdict = model.MBMFail
		res.Reason = fmt.Sprintf("window-limited: %d packets in flight carried %s over %.0f ms, below %.2g × the target %s (the path's round trip is longer than the target's)",
			res.UDP.WindowPackets, rate(res.UDP.SenderMinRateBps), res.UDP.RateWindowMs, res.UDP.MinRateFraction, rate(p.RateBps))
	case res.UDP.SenderMinRateBps < need && d != mbm.Fail:
		res.Verdict = model.MBMError
		res.Reason = fmt.Sprintf("the sender could not produce the pattern: %s sustained over %.0f ms, below %.2g × the target %s", rate(res.UDP.SenderMinRateBps), res.UDP.RateWindowMs, res.UDP.MinRateFraction, rate(t.pt.Rate))
	case res.UDP.SendErrors > 0:
		res.Verdict = model.MBMInconclusive
		res.Reason = fmt.Sprintf("pattern not produced: this host refused to send %d packets", res.UDP.SendErrors)
	case res.UDP.Deadlines > 0 && float64(res.UDP.MissedDeadlines) > missedShare*float64(res.UDP.Deadlines):
		res.Verdict = model.MBMInconclusive
		res.Reason = fmt.Sprintf("pattern not produced: %d of %d deadlines missed (schedule error p99 %.0f µs)", res.UDP.MissedDeadlines, res.UDP.Deadlines, res.UDP.ScheduleErrorP99Us)
	case d == mbm.Fail:
		res.Verdict = model.MBMFail
		res.Reason = fmt.Sprintf("%d marks in %d packets crossed the FAIL line (p1 = %.4g)", res.Marks, res.Packets, p.P1)
		if res.UDP.ReceiverMinRateBps > 0 && res.UDP.ReceiverMinRateBps < need {
			res.Reason += fmt.Sprintf("; the path carried %s, below %.2g × the target", rate(res.UDP.ReceiverMinRateBps), res.UDP.MinRateFraction)
		}
	case res.UDP.ReceiverMinRateBps > 0 && res.UDP.ReceiverMinRateBps < need:
		res.Verdict = model.MBMFail
		res.Reason = fmt.Sprintf("the path carried %s, below %.2g × the pattern's %s", rate(res.UDP.ReceiverMinRateBps), res.UDP.MinRateFraction, rate(t.pt.Rate))
	case d == mbm.Pass:
		res.Verdict = model.MBMPass
		res.Reason = fmt.Sprintf("%d marks in %d packets reached the PASS line (p0 = %.4g)", res.Marks, res.Packets, p.P0)
	case d == mbm.Inconclusive:
		res.Verdict = model.MBMInconclusive
		res.Reason = fmt.Sprintf("no decision at the truncation point (%d packets)", res.Packets)
	case truncated:
		res.Verdict = model.MBMInconclusive
		res.Reason = fmt.Sprintf("no decision within the server's grant (%d packets counted)", res.Packets)
	default:
		res.Verdict = model.MBMInconclusive
		res.Reason = fmt.Sprintf("no decision after %d packets", res.Packets)
	}
	if (res.Verdict == model.MBMError || res.Verdict == model.MBMInconclusive) && (d == mbm.Pass || d == mbm.Fail) {
		// Not a verdict on the path, but what the statistics said.
		res.Reason += fmt.Sprintf(" (the SPRT alone: %s at %d packets)", d, res.Packets)
	}
}

func errorResult(res *model.MBMTest, t *test, reason string) *model.MBMTest {
	res.Verdict, res.Reason = model.MBMError, reason
	return res
}

func rate(bps float64) string { return units.FormatRatePrecise(bps) }

func patternText(pt pattern) string {
	switch pt.ID {
	case TestPaced:
		return fmt.Sprintf("1 packet every %s", pt.Gap)
	case TestBackground:
		return fmt.Sprintf("1 packet every %s (%.2g of the target rate)", pt.Gap, backgroundShare)
	case TestWindowed:
		return fmt.Sprintf("1 packet every %s, at most %d in flight", pt.Gap, pt.Window)
	case TestSlowstart:
		return fmt.Sprintf("%d packets in sub-bursts of %d every %s at twice the rate, every %s", pt.Burst, pt.Sub, pt.SubGap, pt.Headway)
	}
	return fmt.Sprintf("bursts of %d packets back to back every %s", pt.Burst, pt.Headway)
}

func mbmwireData(b []byte, token uint64, seq int64, at time.Time, pos, burst uint32) {
	mbmwire.PutData(b, mbmwire.Data{Token: token, Seq: uint64(seq), SendNs: at.UnixNano(), Pos: pos, Burst: burst})
}

// Validate checks what Run would refuse before it sends anything.
func Validate(cfg Config) error {
	if cfg.MinRateFraction != 0 && !(cfg.MinRateFraction > 0 && cfg.MinRateFraction <= 1) {
		return fmt.Errorf("minimum rate fraction %g: want more than 0, at most 1", cfg.MinRateFraction)
	}
	if cfg.Plan.MTU <= udpIPOverhead+mbmwire.DataHeaderLen || cfg.Plan.MTU-udpIPOverhead > mbmwire.MaxPacketBytes {
		return fmt.Errorf("MTU %d: the UDP mode needs %d to %d", cfg.Plan.MTU, udpIPOverhead+mbmwire.DataHeaderLen+1, mbmwire.MaxPacketBytes+udpIPOverhead)
	}
	if len(cfg.Tests) == 0 {
		return errors.New("no test to run")
	}
	for _, id := range cfg.Tests {
		if closedLoop(id) {
			id = TestPaced // the same bounds on the target's packet rate
		}
		if _, err := newPattern(id, cfg.Plan, cfg.Derate, max(cfg.BurstPackets, 1)); err != nil {
			return err
		}
	}
	return nil
}
