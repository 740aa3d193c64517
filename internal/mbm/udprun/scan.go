package udprun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
)

// RFC 8337 §8.2, the standing queue tests, from one scan: a window
// clocked by the receiver's per-arrival feedback (as TCP's by its ACKs),
// paced at most at twice the target rate, starts at W/4 and grows by one
// packet every two windows sent (each step is two round trips: the first
// builds the queue of the new window, the second measures it). The RTT of
// each step (the least of its second half), its delivery rate and the
// fate of every packet give:
//
//   - the onset of queueing: the first of two steps in a row whose RTT is
//     queueThreshold above the base RTT (single packets, one at a time,
//     before the scan);
//   - 8.2.1 congestion avoidance: PASS if more than the target run length
//     R packets are delivered between the onset of queueing and the first
//     loss or CE mark;
//   - 8.2.2 bufferbloat: PASS if the first loss or mark comes before the
//     standing queue has added twice the target RTT;
//   - 8.2.3 non excessive loss: PASS if the losses in the two round trips
//     from the first loss are at most one per round trip per packet the
//     window outgrew its last loss-free size (the RFC's "the increase of
//     the test stream's window since the previous RTT", with no cross
//     traffic: the subpath's throughput does not fall at the onset of loss);
//   - 8.2.4 duplex self-interference: PASS if, with a standing queue, the
//     RTT stays within target_RTT/4 (the RFC: a bound below target_RTT/2)
//     of the queueing time of the window at the subpath's capacity,
//     max(base, w/C). The return path carries the sink's feedback, one
//     small datagram per arrival, as TCP's ACKs. C is the larger of the
//     measured delivery rate and the target's packet rate: the delivery
//     rate alone cannot show the interference, which lowers it as much as
//     it raises the RTT (a window-clocked stream's RTT is its window over
//     its delivery rate, Little's law), and a subpath that supports the
//     target carries at least the target's rate.
const (
	scanBaseProbes = 8
	// scanStepRTTs: each step is two windows (round trips).
	scanStepRTTs = 2
	// scanMaxWindow bounds the scan's window (and its steps).
	scanMaxWindow = 4096
	// scanMaxDuration bounds the scan's time (the server may cut it).
	scanMaxDuration = 120 * time.Second
)

// isScan says whether id is one of 8.2's tests; closedLoop whether id is
// a test that steers by the feedback rather than a fixed pattern.
func isScan(id string) bool {
	return id == TestScanCA || id == TestScanBloat || id == TestScanLoss || id == TestScanDuplex
}

func closedLoop(id string) bool { return isScan(id) || id == TestAQM }

// scanWindows are the scan's first and largest windows for a target
// window w: from w/4 (a path whose round trip is a quarter of the target's
// queues from the start) to 8w + 64, at most scanMaxWindow.
func scanWindows(w int64) (first, last int64) {
	return max(1, w/4), min(8*w+64, scanMaxWindow)
}

// scanData is what the scan measured: the input of analyzeScan.
type scanData struct {
	base      time.Duration
	targetRTT time.Duration
	// targetPPS is the target's rate in packets of packetBit per second
	// (its payload rate over the payload of a packet); 0: none.
	targetPPS float64
	runLength float64 // R
	packetBit float64 // bits of one IP packet
	ceiling   float64 // the sender's pacing ceiling, bit/s
	steps     []scanStep
	// Per packet (sequence number), the whole session: send time (Unix
	// ns), RTT sample (0: none) and fate.
	sendNs, rttNs []int64
	fate          []uint8
	scanFrom      int64 // the first packet of the scan (after the base probes)
	stop          string
	// The sender's window refills: count, late ones, the longest lag.
	refills, lateRefills int64
	maxLag               time.Duration
}

// refillLimit is how late the sender may refill its window after the
// feedback that opened it: a tenth of the base RTT, at least 1 ms. A
// sender later than that more often than missedShare did not hold its
// window: the queue it measured is not the window's.
func refillLimit(base time.Duration) time.Duration {
	return max(time.Millisecond, base/10)
}

type scanStep struct{ w, from, to int64 }

// runScan runs the scan and returns the 8.2 tests cfg asks for, in order.
func runScan(ctx context.Context, api *apiclient.Client, cfg Config) ([]model.MBMTest, error) {
	p := cfg.Plan
	ids := []string{}
	for _, id := range cfg.Tests {
		if isScan(id) && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	ceiling := 2 * p.RateBps
	w0, wMax := scanWindows(p.W)
	packets := int64(scanBaseProbes)
	for w := w0; w <= wMax; w++ {
		packets += scanStepRTTs * w
	}
	packets += 4 * wMax // the last step, held after the first mark
	l, rep, err := openLoop(ctx, api, cfg, "8.2", ceiling, min(packets, maxLoopPackets), scanMaxDuration.Seconds())
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); l.run() }()
	d := scanData{targetRTT: p.RTT, runLength: float64(p.R), packetBit: float64(p.MTU * 8), ceiling: ceiling,
		targetPPS: p.RateBps / float64(8*(p.MTU-p.HeaderOverhead))}
	sendErr := l.scan(ctx, &d, p, ceiling, w0, wMax)
	// Let the last packets' fates come in (bounded by the loss timeout).
	_ = l.waitUntilFor(ctx, max(4*p.RTT, 200*time.Millisecond)+4*d.base+100*time.Millisecond, func(s loopState) bool { return s.final >= s.sent })
	final, endErr := l.finish(ctx, api, rep, "", "the standing queue scan: the client's result has the verdicts")
	<-done
	l.mu.Lock()
	d.sendNs, d.rttNs, d.fate = l.sendNs[:l.sent], l.rttNs[:l.sent], l.fate[:l.sent]
	sent, sendErrs, gaps := l.sent, l.sendErrs, l.gaps
	l.mu.Unlock()
	sc := analyzeScan(&d)
	hostReason := scanHostReason(&d, sendErrs)
	var out []model.MBMTest
	for _, id := range ids {
		name, _ := TestName(id)
		t := model.MBMTest{ID: id, Name: name, Transport: "udp", UDP: &model.MBMUDP{
			Pattern:       fmt.Sprintf("window from %d to at most %d packets, +1 every %d windows, clocked by an ACK per arrival, at most %s", w0, wMax, scanStepRTTs, rate(ceiling)),
			GrowthPackets: d.scanFrom, PacketsSent: sent, SendErrors: sendErrs, FeedbackGaps: gaps, Scan: sc.scan}}
		if endErr == nil {
			t.UDP.Reordered, t.UDP.Duplicates, t.UDP.Late = final.Reordered, final.Duplicates, final.Late
			t.UDP.ReceiverRateBps, t.UDP.ReceiverMinRateBps = final.RateBps, final.MinRateBps
		}
		if n := len(sc.scan.Steps); n > 0 {
			t.UDP.WindowPackets = sc.scan.Steps[n-1].Window
		}
		if len(d.sendNs) > 0 {
			t.UDP.DurationMs = float64(d.sendNs[len(d.sendNs)-1]-d.sendNs[0]) / 1e6
		}
		t.Packets, t.Marks, t.Losses, t.CE = sc.packets, sc.losses+sc.ce, sc.losses, sc.ce
		if t.Packets > 0 {
			t.Loss = float64(t.Marks) / float64(t.Packets)
		}
		t.LossLow, t.LossHigh = mbm.Wilson(t.Marks, t.Packets)
		v := sc.verdicts[id]
		switch {
		case sendErr != nil && !errors.Is(sendErr, errGrantOver):
			t.Verdict, t.Reason = model.MBMError, fmt.Sprintf("the scan stopped after %d packets: %v", sent, sendErr)
		case endErr != nil:
			t.Verdict, t.Reason = model.MBMError, fmt.Sprintf("server gone after %d packets (partial result): %v", sent, endErr)
		case hostReason != "":
			t.Verdict, t.Reason = model.MBMInconclusive, hostReason
			if v.verdict == model.MBMPass || v.verdict == model.MBMFail {
				t.Reason += fmt.Sprintf(" (the scan alone: %s, %s)", v.verdict, v.reason)
			}
		default:
			t.Verdict, t.Reason = v.verdict, v.reason
		}
		out = append(out, t)
	}
	switch {
	case sendErr != nil && !errors.Is(sendErr, errGrantOver):
		return out, fmt.Errorf("test 8.2: %w", sendErr)
	case endErr != nil:
		return out, fmt.Errorf("test 8.2: %w", endErr)
	}
	return out, nil
}

// waitUntilFor is waitUntil bounded by d.
func (l *loop) waitUntilFor(ctx context.Context, d time.Duration, cond func(loopState) bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return l.waitUntil(ctx, cond)
}

// stallTimeout is how long a closed-loop sender waits for its window:
// the loss timeout and a margin (a window whose packets were all lost is
// never acknowledged).
func stallTimeout(p mbm.Plan) time.Duration {
	return max(4*p.RTT, 200*time.Millisecond) + time.Second
}

// stepRTT is the least RTT sample of the second half of a step's packets
// so far (0: none): the standing queue of its window, not one sample
// delayed by a busy host.
func (l *loop) stepRTT(s scanStep) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var least int64
	for _, r := range l.rttNs[s.from+(s.to-s.from)/2 : min(s.to, l.sent)] {
		if r > 0 && (least == 0 || r < least) {
			least = r
		}
	}
	return time.Duration(least)
}

// scan sends the base probes and the scan's steps into d.
func (l *loop) scan(ctx context.Context, d *scanData, p mbm.Plan, ceiling float64, w0, wMax int64) error {
	base, err := l.baseRTT(ctx, scanBaseProbes, stallTimeout(p))
	if err != nil {
		d.stop = "no base RTT: " + err.Error()
		return err
	}
	d.base = base
	d.scanFrom = l.state().sent
	gap := time.Duration(d.packetBit / ceiling * 1e9)
	bloatStop := d.base + 4*p.RTT // twice 8.2.2's bound: it has decided
	ceilingWindow := ceiling / d.packetBit * d.base.Seconds()
	next := time.Now()
	w := w0
	var holdUntil int64 = -1 // after the first mark: the window holds until this packet is sent
	for {
		st := l.state()
		step := scanStep{w: w, from: st.sent, to: st.sent + scanStepRTTs*w}
		if holdUntil >= 0 {
			step.to = max(step.from+1, min(step.to, holdUntil))
		}
		for seq := step.from; seq < step.to; seq++ {
			blocked := l.state().inflight >= w
			err := l.waitUntilFor(ctx, stallTimeout(p), func(s loopState) bool { return s.inflight < w && !time.Now().Before(next) })
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				// The window's last packets were all lost: nothing arrives
				// after them to make their loss final.
				d.steps = appendStep(d.steps, step, seq)
				d.stop = fmt.Sprintf("stalled: no packet of the window of %d arrived for %s", w, stallTimeout(p))
				return nil
			}
			if err != nil {
				d.steps = appendStep(d.steps, step, seq)
				d.stop = err.Error()
				return err
			}
			if blocked {
				// The window opened with a feedback: how late this host
				// answered it (from the feedback's kernel receive time, or
				// the pacing deadline if later, to now).
				opened := l.state().lastFB
				if next.After(opened) {
					opened = next
				}
				lag := time.Since(opened)
				d.refills++
				d.maxLag = max(d.maxLag, lag)
				if lag > refillLimit(d.base) {
					d.lateRefills++
				}
			}
			ok, err := l.send()
			if err != nil || !ok {
				d.steps = appendStep(d.steps, step, seq)
				if err == nil {
					err = errGrantOver
				}
				d.stop = err.Error()
				return err
			}
			// Paced at the ceiling; a late sender catches up one gap at most.
			next = next.Add(gap)
			if late := time.Now().Add(-gap); next.Before(late) {
				next = late
			}
		}
		d.steps = append(d.steps, step)
		st = l.state()
		// The steps before this one: their samples have all come by now
		// (this one lasted a round trip or more).
		prev, over, idle := time.Duration(0), false, false
		if n := len(d.steps); n >= 3 {
			prev = l.stepRTT(d.steps[n-2])
			over = prev > bloatStop && l.stepRTT(d.steps[n-3]) > bloatStop
			idle = prev > 0 && prev < d.base+queueThreshold(d.base)
		}
		switch {
		case holdUntil >= 0 && st.sent >= holdUntil:
			d.stop = "two round trips after the first loss or mark"
			return nil
		case holdUntil < 0 && st.firstMark >= 0:
			// The onset of loss: hold the window (8.2.3 counts the losses of
			// the next two round trips at this window).
			holdUntil = st.sent + scanStepRTTs*w
			continue
		case over: // two steps in a row
			d.stop = fmt.Sprintf("no loss with the RTT %s above the base: twice 8.2.2's bound", (prev - d.base).Round(time.Millisecond))
			return nil
		case idle && float64(w) > 2*ceilingWindow+4:
			// The ceiling fills at most ceilingWindow packets a round trip:
			// a larger window never binds, and no queue of ours builds.
			d.stop = fmt.Sprintf("window %d no longer binds: at %s the round trip holds %.1f packets and nothing queued", w, rate(ceiling), ceilingWindow)
			return nil
		case w >= wMax:
			d.stop = fmt.Sprintf("the largest window, %d packets, without a loss", wMax)
			return nil
		case ctx.Err() != nil:
			d.stop = ctx.Err().Error()
			return ctx.Err()
		}
		if holdUntil < 0 {
			w++
		}
	}
}

// appendStep appends the part of step sent before packet to.
func appendStep(steps []scanStep, s scanStep, to int64) []scanStep {
	if to > s.from {
		s.to = to
		steps = append(steps, s)
	}
	return steps
}

// scanHostReason says why the scan's window was not the one this host
// meant to hold ("" if it was): packets it refused to send, or refills
// late more often than missedShare.
func scanHostReason(d *scanData, sendErrs int64) string {
	switch {
	case sendErrs > 0:
		return fmt.Sprintf("pattern not produced: this host refused to send %d packets", sendErrs)
	case float64(d.lateRefills) > missedShare*float64(d.refills):
		return fmt.Sprintf("pattern not produced: %d of %d window refills came more than %s after the feedback (at most %s): this host did not hold the window",
			d.lateRefills, d.refills, refillLimit(d.base), d.maxLag.Round(100*time.Microsecond))
	}
	return ""
}

// scanOutcome is the analysis: the record and each test's verdict.
type scanOutcome struct {
	scan                *model.MBMScan
	packets, losses, ce int64
	verdicts            map[string]scanVerdict
}

type scanVerdict struct {
	verdict model.MBMVerdict
	reason  string
}

// queueThreshold is the RTT rise that counts as a standing queue: 1 ms
// (a host's scheduling noise stays below it) or 5 % of the base RTT.
func queueThreshold(base time.Duration) time.Duration {
	return max(time.Millisecond, base/20)
}

// analyzeScan derives the four verdicts from a scan's record (pure).
func analyzeScan(d *scanData) scanOutcome {
	ms := func(ns float64) float64 { return ns / 1e6 }
	thr := queueThreshold(d.base)
	sc := &model.MBMScan{BaseRTTMs: ms(float64(d.base)), QueueThresholdMs: ms(float64(thr)), CeilingBps: d.ceiling,
		FirstMarkPacket: -1, FirstLossPacket: -1, Stop: d.stop,
		Refills: d.refills, LateRefills: d.lateRefills, RefillLimitMs: ms(float64(refillLimit(d.base))), MaxRefillLagMs: ms(float64(d.maxLag))}
	out := scanOutcome{scan: sc, verdicts: map[string]scanVerdict{}}
	n := int64(len(d.fate))
	for seq := d.scanFrom; seq < n; seq++ {
		out.packets++
		switch d.fate[seq] {
		case fateLost:
			out.losses++
			if sc.FirstLossPacket < 0 {
				sc.FirstLossPacket = seq
			}
		case fateCE:
			out.ce++
		}
		if f := d.fate[seq]; (f == fateLost || f == fateCE) && sc.FirstMarkPacket < 0 {
			sc.FirstMarkPacket = seq
		}
	}
	// Per step: the least RTT of its second half (the queue of its window
	// stands there), its sending rate (ACK-clocked: the delivery rate).
	rtts := make([]time.Duration, len(d.steps))
	for i, s := range d.steps {
		st := model.MBMScanStep{Window: s.w, From: s.from, Packets: s.to - s.from}
		var least int64
		for seq := s.from; seq < s.to && seq < n; seq++ {
			switch d.fate[seq] {
			case fateLost:
				st.Losses++
			case fateCE:
				st.CE++
			}
			if seq >= s.from+(s.to-s.from)/2 {
				if r := d.rttNs[seq]; r > 0 && (least == 0 || r < least) {
					least = r
				}
			}
		}
		rtts[i] = time.Duration(least)
		st.RTTMs = ms(float64(least))
		if last := min(s.to, n) - 1; last > s.from && d.sendNs[last] > d.sendNs[s.from] {
			st.RateBps = float64(last-s.from) * d.packetBit / (float64(d.sendNs[last]-d.sendNs[s.from]) / 1e9)
		}
		sc.Steps = append(sc.Steps, st)
	}
	queued := func(i int) bool { return rtts[i] > 0 && rtts[i] > d.base+thr }
	onset := -1 // the first queued step, the next one queued too (or the last)
	for i := range d.steps {
		if queued(i) && (i+1 == len(d.steps) || queued(i+1) || rtts[i+1] == 0) {
			onset = i
			break
		}
	}
	mark := -1 // the step of the first mark
	for i, s := range d.steps {
		if sc.FirstMarkPacket >= s.from && sc.FirstMarkPacket < s.to {
			mark = i
			sc.FirstMarkWindow = s.w
		}
	}
	if onset >= 0 {
		sc.OnsetPacket = d.steps[onset].from
		sc.OnsetWindow = d.steps[onset].w - 1
		if onset > 0 {
			sc.OnsetWindow = d.steps[onset-1].w
		}
		// The capacity: the median rate of the queued steps before the mark.
		hi := len(d.steps)
		if mark >= 0 {
			hi = max(mark, onset+1)
		}
		var rates []float64
		for _, s := range sc.Steps[onset:hi] {
			if s.RateBps > 0 {
				rates = append(rates, s.RateBps)
			}
		}
		if len(rates) > 0 {
			slices.Sort(rates)
			sc.CapacityBps = rates[len(rates)/2]
		}
	}
	// The queue at the first mark (or the largest, with none).
	var queue time.Duration
	switch {
	case mark >= 0:
		for i := mark; i >= 0; i-- {
			if rtts[i] > 0 {
				queue = max(rtts[i]-d.base, 0)
				break
			}
		}
	default:
		for _, r := range rtts {
			queue = max(queue, r-d.base)
		}
	}
	sc.QueueAtMarkMs = ms(float64(queue))
	if sc.CapacityBps > 0 {
		sc.QueueAtMarkPackets = queue.Seconds() * sc.CapacityBps / d.packetBit
	}
	lastW := int64(0)
	if len(d.steps) > 0 {
		lastW = d.steps[len(d.steps)-1].w
	}

	// 8.2.1
	var v scanVerdict
	switch {
	case onset < 0 && sc.FirstMarkPacket >= 0:
		v = scanVerdict{model.MBMFail, fmt.Sprintf("a mark (packet %d, window %d) with no standing queue: the RTT never rose %s above the base %s", sc.FirstMarkPacket, sc.FirstMarkWindow, thr, d.base.Round(time.Microsecond))}
	case onset < 0:
		v = scanVerdict{model.MBMInconclusive, fmt.Sprintf("no standing queue up to window %d: the RTT never rose %s above the base %s (at most %s sent: a faster bottleneck does not queue)", lastW, thr, d.base.Round(time.Microsecond), rate(d.ceiling))}
	case sc.FirstMarkPacket >= 0 && sc.FirstMarkPacket < sc.OnsetPacket:
		v = scanVerdict{model.MBMFail, fmt.Sprintf("the first mark (packet %d, window %d) came before the queue stood (onset at window %d)", sc.FirstMarkPacket, sc.FirstMarkWindow, sc.OnsetWindow)}
	default:
		end := n
		if sc.FirstMarkPacket >= 0 {
			end = sc.FirstMarkPacket
		}
		for seq := sc.OnsetPacket; seq < end; seq++ {
			if d.fate[seq] == fateArrived {
				sc.StandingPackets++
			}
		}
		switch {
		case float64(sc.StandingPackets) > d.runLength:
			v = scanVerdict{model.MBMPass, fmt.Sprintf("%d packets delivered with a standing queue before the first mark, more than the run length R = %.0f (onset at window %d)", sc.StandingPackets, d.runLength, sc.OnsetWindow)}
		case sc.FirstMarkPacket >= 0:
			v = scanVerdict{model.MBMFail, fmt.Sprintf("the first mark came after %d packets with a standing queue, not more than R = %.0f (onset at window %d, mark at %d)", sc.StandingPackets, d.runLength, sc.OnsetWindow, sc.FirstMarkWindow)}
		default:
			v = scanVerdict{model.MBMInconclusive, fmt.Sprintf("the scan ended (%s) after %d packets with a standing queue, no mark, not more than R = %.0f", d.stop, sc.StandingPackets, d.runLength)}
		}
	}
	out.verdicts[TestScanCA] = v

	// 8.2.2
	bound := 2 * d.targetRTT
	inPackets := ""
	if sc.CapacityBps > 0 {
		inPackets = fmt.Sprintf(", %.0f packets at %s", sc.QueueAtMarkPackets, rate(sc.CapacityBps))
	}
	switch {
	case len(d.steps) == 0 || d.base == 0:
		v = scanVerdict{model.MBMError, "no scan: " + d.stop}
	case sc.FirstMarkPacket >= 0 && queue <= bound:
		v = scanVerdict{model.MBMPass, fmt.Sprintf("the first loss or mark came with %s queued%s, within twice the target RTT (%s)", queue.Round(100*time.Microsecond), inPackets, bound)}
	case sc.FirstMarkPacket >= 0:
		v = scanVerdict{model.MBMFail, fmt.Sprintf("bufferbloat: the first loss or mark came only with %s queued%s, more than twice the target RTT (%s)", queue.Round(100*time.Microsecond), inPackets, bound)}
	case queue > bound:
		v = scanVerdict{model.MBMFail, fmt.Sprintf("bufferbloat: no loss or mark with %s queued%s, more than twice the target RTT (%s)", queue.Round(100*time.Microsecond), inPackets, bound)}
	default:
		v = scanVerdict{model.MBMInconclusive, fmt.Sprintf("no loss or mark up to window %d (%s queued, the bound is %s): %s", lastW, queue.Round(100*time.Microsecond), bound, d.stop)}
	}
	out.verdicts[TestScanBloat] = v

	// 8.2.3
	switch {
	case sc.FirstLossPacket < 0 && out.ce > 0:
		v = scanVerdict{model.MBMPass, fmt.Sprintf("no loss: the onset of congestion was signalled by %d CE marks", out.ce)}
	case sc.FirstLossPacket < 0:
		v = scanVerdict{model.MBMInconclusive, fmt.Sprintf("no loss in the scan (%s)", d.stop)}
	default:
		li := -1
		for i, s := range d.steps {
			if sc.FirstLossPacket >= s.from && sc.FirstLossPacket < s.to {
				li = i
			}
		}
		wl := d.steps[li].w
		lossless := wl - 1 // the last loss-free window
		if li > 0 {
			lossless = min(lossless, d.steps[li-1].w)
		}
		end := sc.FirstLossPacket + scanStepRTTs*wl
		wTop := wl
		for _, s := range d.steps[li:] {
			if s.from < end {
				wTop = max(wTop, s.w)
			}
		}
		sc.AllowedLosses = scanStepRTTs * max(1, wTop-lossless)
		for seq := sc.FirstLossPacket; seq < end && seq < n; seq++ {
			if d.fate[seq] == fateLost {
				sc.LossesAtOnset++
			}
		}
		switch {
		case end > n:
			v = scanVerdict{model.MBMInconclusive, fmt.Sprintf("the scan ended %d packets after the first loss, before two round trips (%d packets) at its window", n-sc.FirstLossPacket, end-sc.FirstLossPacket)}
		case sc.LossesAtOnset <= sc.AllowedLosses:
			v = scanVerdict{model.MBMPass, fmt.Sprintf("%d losses in the two round trips from the first loss (window %d), at most %d: the window's growth over the last loss-free window (%d)", sc.LossesAtOnset, wl, sc.AllowedLosses, lossless)}
		default:
			v = scanVerdict{model.MBMFail, fmt.Sprintf("excessive loss: %d losses in the two round trips from the first loss (window %d), more than %d, the window's growth over the last loss-free window (%d)", sc.LossesAtOnset, wl, sc.AllowedLosses, lossless)}
		}
	}
	out.verdicts[TestScanLoss] = v

	// 8.2.4
	duplexBound := d.targetRTT / 4
	switch {
	case onset < 0 || sc.CapacityBps == 0:
		v = scanVerdict{model.MBMInconclusive, fmt.Sprintf("no standing queue to measure (up to window %d, RTT within %s of the base)", lastW, thr)}
	default:
		hi := len(d.steps)
		if mark >= 0 {
			hi = mark
		}
		var worst time.Duration
		worstW := int64(0)
		// The subpath's capacity: the delivery rate, or the target's if
		// that is more (see the package comment: self-interference lowers
		// the delivery rate).
		pps, at := sc.CapacityBps/d.packetBit, fmt.Sprintf("the delivery rate, %s", rate(sc.CapacityBps))
		if d.targetPPS > pps {
			pps, at = d.targetPPS, fmt.Sprintf("the target's %s (the delivery rate was %s)", rate(d.targetPPS*d.packetBit), rate(sc.CapacityBps))
		}
		for i := onset; i < hi; i++ {
			if rtts[i] == 0 {
				continue
			}
			expect := max(d.base, time.Duration(float64(d.steps[i].w)/pps*1e9))
			if e := rtts[i] - expect; e > worst || worstW == 0 {
				worst, worstW = e, d.steps[i].w
			}
		}
		sc.MaxExcessMs = ms(float64(worst))
		switch {
		case worstW == 0:
			v = scanVerdict{model.MBMInconclusive, "no step with a standing queue before the first mark"}
		case worst <= duplexBound:
			v = scanVerdict{model.MBMPass, fmt.Sprintf("with a standing queue the RTT stayed within %s of the window's queueing time at %s (at most %s above, window %d; the return path carried an ACK per arrival)", duplexBound, at, worst.Round(100*time.Microsecond), worstW)}
		case sc.CapacityBps/d.packetBit < pps:
			v = scanVerdict{model.MBMFail, fmt.Sprintf("self-interference, or a subpath slower than the target: at window %d the RTT was %s above the window's queueing time at %s, more than target_RTT/4 (%s)", worstW, worst.Round(100*time.Microsecond), at, duplexBound)}
		default:
			v = scanVerdict{model.MBMFail, fmt.Sprintf("self-interference: at window %d the RTT was %s above the window's queueing time at %s, more than target_RTT/4 (%s)", worstW, worst.Round(100*time.Microsecond), at, duplexBound)}
		}
	}
	out.verdicts[TestScanDuplex] = v
	if math.IsNaN(sc.QueueAtMarkPackets) {
		sc.QueueAtMarkPackets = 0
	}
	return out
}
