package tcprun

import (
	"fmt"
	"math"
	"time"
)

// 8.1.2's window (docs/mbm.md, "TCP tests"): the receiver advertises at
// most W target packets, bounded by its buffer before the handshake
// (mbmwire.ReceiveBufferFor); the sender writes unpaced and the window
// alone sets the rate, W packets per RTT. Pure, so that the checks are
// tested with synthetic TCP_INFO series.

// maxWindowAttempts bounds the sessions 8.1.2 opens to land the window:
// one with the server's rule, then buffers corrected by the window read
// back.
const maxWindowAttempts = 3

// windowSlack is how many packets above W the window and the packets in
// flight may reach (and below W the per-RTT delivery may fall) for the
// pattern to count as W: the kernel rounds the window to segments, and a
// sample may fall between an ACK and the segments it releases.
func windowSlack(w int64) int64 { return max(2, w/10) }

// windowFit is the window read back against W packets of mss bytes.
type windowFit int

const (
	windowOK    windowFit = iota
	windowSmall           // below W: the pattern cannot be produced
	windowLarge           // above W + slack: not bounded to the pattern
)

// fitWindow judges the largest window the receiver advertised (bytes;
// tcpi_snd_wnd) or, where the kernel does not report it (0), the most
// packets in flight, against W. A window may fall half a segment short
// of W·MSS (window scaling's granularity) and still carry W packets.
func fitWindow(maxSndWnd, maxInFlight, w int64, mss int) (windowFit, string) {
	slack := windowSlack(w)
	if maxSndWnd <= 0 {
		if maxInFlight > w+slack {
			return windowLarge, fmt.Sprintf("%d packets in flight (the kernel reports no tcpi_snd_wnd), above W = %d + %d", maxInFlight, w, slack)
		}
		return windowOK, ""
	}
	segs := float64(maxSndWnd) / float64(mss)
	switch {
	case maxSndWnd < w*int64(mss)-int64(mss/2):
		return windowSmall, fmt.Sprintf("the receiver advertised at most %d bytes (%.1f packets of %d), below W = %d", maxSndWnd, segs, mss, w)
	case maxSndWnd > (w+slack)*int64(mss) || maxInFlight > w+slack:
		return windowLarge, fmt.Sprintf("the receiver advertised up to %d bytes (%.1f packets of %d) and %d packets were in flight, above W = %d + %d", maxSndWnd, segs, mss, maxInFlight, w, slack)
	}
	return windowOK, ""
}

// rcvbufOffset is the fit's offset (mbmwire's rule: advertised ≈ slope ×
// SO_RCVBUF − offset, Linux 6.18 through the lab's TUN links).
const rcvbufOffset = 2270

// correctBuffer is the SO_RCVBUF for the next attempt: set gave a
// largest window of advertised bytes; the receiver's own slope is taken
// from that one point (the fit's offset kept), and the buffer aimed half
// a segment above W·MSS. It moves at least 1 % and at most × 4 or ÷ 4,
// within lo … hi.
func correctBuffer(set int, advertised int64, w int64, mss, lo, hi int) int {
	want := float64(w*int64(mss)) + float64(mss)/2
	next := float64(set) * want / float64(max(advertised, 1))
	if advertised > 0 {
		slope := (float64(advertised) + rcvbufOffset) / float64(set)
		next = (want + rcvbufOffset) / slope
	}
	next = max(float64(set)/4, min(next, float64(set)*4))
	if math.Abs(next-float64(set)) < float64(set)/100 {
		if advertised < w*int64(mss) {
			next = float64(set) * 1.01
		} else {
			next = float64(set) * 0.99
		}
	}
	return max(lo, min(int(math.Ceil(next)), hi))
}

// PerRTT is the per-RTT delivery check: from TCP_INFO samples (the
// cumulative tcpi_delivered and the smoothed RTT, at most RTT/2 apart),
// spans of at least one srtt, each scaled to one srtt: the segments a
// window of W delivers per RTT when the path carries it. Fewer mean the
// window was not filled: the congestion window below it after losses (the
// path), or a sender that did not keep data queued (the host).
type PerRTT struct {
	// W is the window and Slack how far below it a span may fall.
	W, Slack int64

	started bool
	t0      time.Duration
	d0      uint32
	sum     float64
	// Spans counts spans; Short those that delivered fewer than W − Slack.
	Spans, Short int
}

// Add takes one sample: t since the test's start, the cumulative
// delivered segments, the smoothed RTT (0: the span cannot be judged and
// restarts).
func (p *PerRTT) Add(t time.Duration, delivered uint32, srtt time.Duration) {
	if !p.started || srtt <= 0 || t <= p.t0 {
		p.started, p.t0, p.d0 = srtt > 0, t, delivered
		return
	}
	span := t - p.t0
	if span < srtt {
		return
	}
	d := delivered - p.d0 // modular: a 32-bit wrap is a small step
	if d >= maxDelta {    // a reset: not counted
		p.t0, p.d0 = t, delivered
		return
	}
	per := float64(d) * float64(srtt) / float64(span)
	p.Spans++
	p.sum += per
	if per < float64(p.W-p.Slack) {
		p.Short++
	}
	p.t0, p.d0 = t, delivered
}

// Mean is the mean segments delivered per RTT (0 without a span).
func (p *PerRTT) Mean() float64 {
	if p.Spans == 0 {
		return 0
	}
	return p.sum / float64(p.Spans)
}

// ShortPct is the share of spans below W − Slack, in percent.
func (p *PerRTT) ShortPct() float64 {
	if p.Spans == 0 {
		return 0
	}
	return 100 * float64(p.Short) / float64(p.Spans)
}

// Reached says whether the window was delivered: a mean of at least
// W − Slack per RTT.
func (p *PerRTT) Reached() bool { return p.Spans > 0 && p.Mean() >= float64(p.W-p.Slack) }
