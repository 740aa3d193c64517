package rtcquality

import "time"

// window is the download's flow control: how many messages may be in
// flight beyond the page's highest acknowledgement.
//
// pion's SCTP never shrinks its congestion window for messages sent without
// retransmissions (they are abandoned as soon as sent, so their loss is
// never counted), so on its own it overruns the browser's receive socket
// (Chromium's WebRTC sockets have small buffers: a few dozen such
// datagrams) and the test would measure its own overrun as loss. The window
// follows the path instead, delay-based like BBR's in-flight cap: twice the
// delivery rate (the best of the recent ack intervals) times the minimum
// RTT, plus a few messages. Acknowledgements advance whatever is lost on
// the way, so random loss does not slow it down; only queueing does.
type window struct {
	sentAt  [winRing]time.Duration // send time by seq % winRing
	minRTT  time.Duration
	rates   [8]float64 // recent delivery rates, messages/s
	ri      int
	lastT   time.Duration
	lastAck int64
	size    int64
	highest int64 // the highest sequence number sent
}

const (
	winRing = 1 << 16
	// winFloor is the window with no rate measured yet, and the minimum:
	// well within a browser's socket buffer.
	winFloor = 16
	winMax   = winRing / 2
)

func newWindow() *window { return &window{size: 2 * winFloor, minRTT: -1} }

// sent records message seq's send time (since the phase began).
func (w *window) sent(seq uint32, t time.Duration) { w.sentAt[seq%winRing] = t }

// acked takes an acknowledgement of everything below next at time t;
// highest is the highest sequence number sent.
func (w *window) acked(next, highest int64, t time.Duration) {
	if next <= 0 || highest-next >= winRing/2 {
		return
	}
	if rtt := t - w.sentAt[(next-1)%winRing]; rtt > 0 && (w.minRTT < 0 || rtt < w.minRTT) {
		w.minRTT = rtt
	}
	// Rates over at least 10 ms: acknowledgements bunched up behind a
	// busy receiver would otherwise read as a burst of delivery rate.
	gap := max(4*w.minRTT, 10*time.Millisecond)
	if w.lastT == 0 {
		w.lastT, w.lastAck = t, next
		return
	}
	if d := t - w.lastT; d >= gap {
		w.rates[w.ri%len(w.rates)] = float64(next-w.lastAck) / d.Seconds()
		w.ri++
		w.lastT, w.lastAck = t, next
		best := 0.0
		for _, r := range w.rates {
			best = max(best, r)
		}
		w.size = min(max(int64(2*best*w.minRTT.Seconds())+winFloor, winFloor), winMax)
	}
}
