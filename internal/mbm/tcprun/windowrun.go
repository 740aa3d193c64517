package tcprun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/mbmwire"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

// 8.1.2 on the runner: the windowed stream, its writer, and the window's
// readback checks (window.go has the pure parts).

// windowFrame is 8.1.2's write: unpaced, the window sets the rate.
const windowFrame = 64 << 10

// openWindowed opens 8.1.2's session and connection with the receive
// window W × the target's payload.
func (r *runner) openWindowed(ctx context.Context) (*WindowedStream, error) {
	ws, ok := r.cfg.Streams.(WindowedStreams)
	if !ok {
		return nil, errors.New("8.1.2 needs a windowed stream (a TCP MBM session of the server), which this stream opener cannot open")
	}
	p := r.cfg.Plan
	window := p.W * int64(r.payload())
	if window < mbmwire.MinReceiveWindowBytes || window > mbmwire.MaxReceiveWindowBytes {
		return nil, fmt.Errorf("a window of %d packets of %d bytes (%d bytes): the protocol bounds it to %d to %d bytes", p.W, r.payload(), window, mbmwire.MinReceiveWindowBytes, mbmwire.MaxReceiveWindowBytes)
	}
	d := r.cfg.MaxGrowth + r.cfg.MaxTest + 5*time.Second
	s, err := ws.OpenWindowed(ctx, WindowRequest{Test: r.id, RateBps: p.RateBps, TargetRTT: p.RTT, MTU: p.MTU, Duration: d,
		WindowBytes: int(window), BufferBytes: r.buffer})
	if err != nil {
		return nil, err
	}
	r.tcp.WindowPackets, r.tcp.ReceiveWindowBytes, r.tcp.WindowAttempts = p.W, int(window), r.attempt
	r.tcp.ReceiveBufferBytes = s.Reply.ReceiveBufferBytes
	r.tcp.ReceiveBufferSetBytes = r.buffer
	if r.buffer == 0 {
		r.tcp.ReceiveBufferSetBytes = mbmwire.ReceiveBufferFor(int(window))
	}
	r.tcp.WindowSlackPackets = windowSlack(p.W)
	r.perRTT = PerRTT{W: p.W, Slack: windowSlack(p.W)}
	return s, nil
}

// setupWindowed sets 8.1.2's writer: frames written as fast as the
// socket takes them, no pacing: the receiver's window of W packets and
// the ACK clock set the rate.
func (r *runner) setupWindowed(w *writer) error {
	r.frameOverhead = float64(protocol.HeaderLen) / float64(windowFrame+protocol.HeaderLen)
	// Keep at least two windows unsent, so that the window, not the
	// writer, is what holds the flow.
	if err := setNotsentLowat(r.rc, max(128<<10, 2*r.tcp.ReceiveWindowBytes)); err != nil {
		return err
	}
	w.payload = windowFrame
	return nil
}

// growthWindow checks, at the end of the growth period, the window the
// receiver advertised (or, where the kernel does not say, the packets in
// flight) against W. Off: an ERROR (the pattern cannot be W), and the
// buffer for another attempt.
//
// At MaxGrowth (atMax) a window below W on a path that dropped packets is
// left to the rate's judgement (shortfall): a receiver grows its window
// with in-order data, so losses also keep it below W, and the congestion
// window held back by them says the path cannot carry the rate; a new
// session would meet the same losses.
func (r *runner) growthWindow(atMax bool) (result, bool) {
	if r.id != TestWindowed {
		return result{}, false
	}
	fit, why := fitWindow(r.growthSndWnd, r.growthInFlight, r.cfg.Plan.W, r.tcp.MSS)
	if fit == windowOK || (fit == windowSmall && atMax && r.growthRetrans > 0) {
		return result{}, false
	}
	r.retry(fit)
	r.tcp.MaxSndWndBytes, r.tcp.MaxInFlight = r.growthSndWnd, r.growthInFlight
	return result{model.MBMError, fmt.Sprintf("by the end of the growth period %s (receive buffer %d, held %d, attempt %d of %d): the pattern was not produced",
		why, r.tcp.ReceiveBufferSetBytes, r.tcp.ReceiveBufferBytes, r.attempt, maxWindowAttempts)}, true
}

// retry sets the buffer another attempt asks for, from the window read
// back (a window judged by the packets in flight alone is not
// corrected: the kernel gives no window to correct from).
func (r *runner) retry(fit windowFit) {
	wnd := max(r.tcp.MaxSndWndBytes, r.growthSndWnd)
	if fit == windowOK || wnd == 0 || r.attempt >= maxWindowAttempts {
		return
	}
	r.retryBuffer = correctBuffer(r.tcp.ReceiveBufferSetBytes, wnd, r.cfg.Plan.W, r.tcp.MSS, mbmwire.MinReceiveBufferBytes, mbmwire.MaxReceiveBufferBytes)
}

// windowVerdict checks 8.1.2's pattern after the test: the window read
// back over the test period within W … W + slack, and W packets
// delivered per RTT. A window off W is an ERROR whatever the SPRT said
// (the pattern was not produced); fewer packets per RTT than W is the
// congestion window below it: a FAIL stands (the path's losses), a PASS
// or an undecided test is INCONCLUSIVE (the pattern was not sustained).
func (r *runner) windowVerdict(res result) result {
	if r.id != TestWindowed || res.verdict == model.MBMError || r.tcp.Samples == 0 {
		return res
	}
	tc := &r.tcp
	p := r.cfg.Plan
	tc.DeliveredPerRTT, tc.RTTSpans, tc.ShortRTTPct = r.perRTT.Mean(), r.perRTT.Spans, r.perRTT.ShortPct()
	if fit, why := fitWindow(tc.MaxSndWndBytes, tc.MaxInFlight, p.W, tc.MSS); fit != windowOK {
		r.retry(fit)
		return result{model.MBMError, fmt.Sprintf("in the test period %s: the pattern was not produced (the measurement: %s, %s)", why, res.verdict, res.reason)}
	}
	perRTT := fmt.Sprintf("%.1f packets delivered per RTT over %d spans (W = %d, %.0f %% of spans below W − %d)", tc.DeliveredPerRTT, tc.RTTSpans, p.W, tc.ShortRTTPct, tc.WindowSlackPackets)
	if !r.perRTT.Reached() {
		if res.verdict == model.MBMFail {
			res.reason += "; " + perRTT + ": the congestion window stayed below the window"
			return res
		}
		return result{model.MBMInconclusive, fmt.Sprintf("%s: the window was not filled, the pattern was not sustained (the SPRT had %s: %s)", perRTT, res.verdict, res.reason)}
	}
	res.reason += fmt.Sprintf("; window read back: up to %d bytes advertised, %d packets in flight; %s", tc.MaxSndWndBytes, tc.MaxInFlight, perRTT)
	return res
}

// endWindowed ends 8.1.2's session with the verdict and records the
// server's readback.
func (r *runner) endWindowed(res result) result {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	verdict, reason := res.verdict, res.reason
	if r.retryBuffer > 0 {
		reason = "the window missed W; the client tries again with another receive buffer: " + reason
	}
	rep, err := r.ws.End(ctx, verdict, reason)
	if err != nil {
		res.reason += fmt.Sprintf("; the server's readback is missing (%v)", err)
		return res
	}
	t := rep.TCP
	tc := &r.tcp
	tc.ReceiveBufferSetBytes, tc.ReceiveBufferBytes = t.ReceiveBufferSetBytes, t.ReceiveBufferBytes
	tc.ServerMaxRcvWndBytes, tc.ServerRcvSpaceBytes, tc.ServerWindowClampBytes, tc.ServerBytes = int64(t.MaxRcvWndBytes), int64(t.RcvSpaceBytes), int64(t.WindowClampBytes), t.Bytes
	// The two ends' readbacks must agree: the window the sender saw is
	// the one the receiver advertised.
	if res.verdict != model.MBMError && t.MaxRcvWndBytes > 0 && tc.MaxSndWndBytes > 0 && int64(t.MaxRcvWndBytes) > tc.MaxSndWndBytes+int64(tc.MSS) {
		res.reason += fmt.Sprintf("; the server advertised up to %d bytes, more than the %d the sender saw in the test period", t.MaxRcvWndBytes, tc.MaxSndWndBytes)
	}
	return res
}
