package tcprun

import (
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
)

// Counters are the cumulative TCP_INFO counters a test reads from one
// sample.
type Counters struct {
	// T is the sample's time since the test's start.
	T time.Duration
	// Delivered and DeliveredCE count segments (tcpi_delivered,
	// tcpi_delivered_ce); TotalRetrans counts retransmitted segments and
	// DSACKDups the retransmissions the receiver reported as duplicates
	// (spurious).
	Delivered, DeliveredCE, TotalRetrans, DSACKDups uint32
	// BytesAcked is the payload the receiver acknowledged.
	BytesAcked uint64
	// BusyUs, RwndLimitedUs and SndbufLimitedUs are the kernel's chrono
	// timers: time with data in flight, and of it, limited by the
	// receiver's window or the sender's buffer.
	BusyUs, RwndLimitedUs, SndbufLimitedUs uint64
	// NotsentBytes is what the socket held that was not yet sent (0: the
	// application did not keep the socket supplied).
	NotsentBytes uint32
	// Cwnd is the congestion window and Unacked the segments in flight.
	Cwnd, Unacked uint32
	// Writes and WholeWrites are the writer's counts at the sample (not
	// TCP_INFO): bursts written, and of them those whose every packet the
	// congestion window let leave at once.
	Writes, WholeWrites int64
	// Missed is the writer's missed headways at the sample.
	Missed int64
}

// CountersOf takes the counters from a TCP_INFO sample, taken t after the
// test's start.
func CountersOf(s model.TCPSample, t time.Duration) Counters {
	return Counters{T: t, Delivered: s.Delivered, DeliveredCE: s.DeliveredCE, TotalRetrans: s.TotalRetrans,
		DSACKDups: s.DsackDups, BytesAcked: s.BytesAcked, BusyUs: s.BusyTimeUs, RwndLimitedUs: s.RwndLimitedUs,
		SndbufLimitedUs: s.SndbufLimitedUs, NotsentBytes: s.NotsentBytes, Cwnd: s.SndCwnd, Unacked: s.Unacked}
}

// Step is what one sample adds to a test: packets to feed the SPRT,
// marked and clean, and the raw counter deltas behind them.
type Step struct {
	// Marked and Clean are the packets to feed, marked ones first.
	Marked, Clean int64
	// Delivered, Retrans, DSACK and CE are this sample's counter deltas.
	Delivered, Retrans, DSACK, CE int64
	// Reset is true when a counter went backwards: the interval across it
	// is unknown and nothing is counted for it.
	Reset bool
}

// maxDelta is the largest counter increase taken as real between two
// samples: a 32-bit counter that moved "forward" by more than half its
// range went backwards (a reset), while a genuine wrap of a counter that
// reached 2³² moves it forward by a small amount under modular
// subtraction.
const maxDelta = 1 << 31

// Accountant turns a test period's TCP_INFO samples into SPRT input
// (metrics.md §7, mbm-notes.md fact 3): n is delivered segments; m is
// losses (retransmissions − DSACK duplicates) plus segments delivered
// with CE. Nothing before Start (the growth period) is counted. Not safe
// for concurrent use.
type Accountant struct {
	started bool
	hold    time.Duration
	prev    Counters
	// queue holds the intervals between samples not yet counted.
	queue []interval
	// Totals counted since Start (DSACK: reported up to the latest
	// sample).
	Delivered, Retrans, DSACK, CE int64
	// Resets counts counters that went backwards.
	Resets int
	// fedLoss is the highest retransmissions − DSACK total counted so
	// far; pending the marks not yet matched with a delivered segment.
	fedLoss, pending int64
}

// interval is what one sample added to the counters.
type interval struct {
	end                    time.Duration
	delivered, ce, retrans int64
}

// maxQueue bounds the intervals held back (a hold of 16 s at 1 ms).
const maxQueue = 1 << 14

// Start ends the growth period: c is the baseline the test period counts
// from. hold is how long an interval waits before it is counted, so that
// the DSACKs of its spurious retransmissions (an RTT or so later) are
// seen first; 0 counts each sample at once.
func (a *Accountant) Start(c Counters, hold time.Duration) {
	*a = Accountant{started: true, prev: c, hold: max(0, hold)}
}

// Started reports whether Start was called.
func (a *Accountant) Started() bool { return a.started }

// delta is cur − prev of a 32-bit counter; ok is false if it went
// backwards.
func delta(cur, prev uint32) (int64, bool) {
	d := cur - prev // modular: a wrap past 2³² stays small and positive
	if d >= maxDelta {
		return 0, false
	}
	return int64(d), true
}

// Add takes one sample of the test period (before Start it only moves
// the baseline) and returns what is counted now: the intervals at least
// the hold old, oldest first.
//
// A loss is a retransmission that no DSACK called spurious. A DSACK
// arrives an RTT or so after its retransmission; an interval is counted
// only once it is the hold old, against the DSACKs reported up to the
// latest sample, so a spurious retransmission whose DSACK came within the
// hold is never a mark. Its deliveries wait with it, so the order of
// packets and marks is kept. A mark once fed to the SPRT cannot be taken
// back: marks are counted only when retransmissions − DSACK duplicates
// exceeds its highest value so far; a DSACK later than the hold leaves
// its mark counted (conservatively), and the totals (Retrans, DSACK) keep
// the exact figures.
//
// Within one interval the order of its deliveries and marks is unknown.
// They are applied conservatively: the marks first, each with one of the
// interval's delivered segments, then the clean ones. The walk can then
// only reach the PASS line later than in the true order, never earlier,
// and the FAIL line at most one interval's packets earlier.
//
// A lost segment's retransmission is counted by tcpi_total_retrans when
// it is sent and by tcpi_delivered only once it is acknowledged, so a
// mark may come before its delivered segment: marks without a delivered
// segment in the interval wait (pending) for the next ones.
func (a *Accountant) Add(c Counters) Step {
	if !a.started {
		a.prev = c
		return Step{}
	}
	dd, ok1 := delta(c.Delivered, a.prev.Delivered)
	dce, ok2 := delta(c.DeliveredCE, a.prev.DeliveredCE)
	dr, ok3 := delta(c.TotalRetrans, a.prev.TotalRetrans)
	ds, ok4 := delta(c.DSACKDups, a.prev.DSACKDups)
	a.prev = c
	var st Step
	if ok1 && ok2 && ok3 && ok4 {
		a.DSACK += ds
		st.DSACK = ds
		a.queue = append(a.queue, interval{end: c.T, delivered: dd, ce: dce, retrans: dr})
	} else {
		// A new connection or a counter reset: the interval's deltas
		// are unknown. Counting resumes from this sample; what was
		// queued and pending belongs to packets before it and is kept.
		a.Resets++
		st.Reset = true
	}
	n := 0
	for n < len(a.queue) && (a.queue[n].end+a.hold <= c.T || len(a.queue)-n > maxQueue) {
		a.count(&st, a.queue[n])
		n++
	}
	a.queue = append(a.queue[:0], a.queue[n:]...)
	return st
}

// count adds one interval to the totals and to st.
func (a *Accountant) count(st *Step, iv interval) {
	a.Delivered += iv.delivered
	a.CE += iv.ce
	a.Retrans += iv.retrans
	st.Delivered += iv.delivered
	st.CE += iv.ce
	st.Retrans += iv.retrans
	marks := iv.ce
	if loss := a.Retrans - a.DSACK; loss > a.fedLoss {
		marks += loss - a.fedLoss
		a.fedLoss = loss
	}
	avail := a.pending + marks
	// Several intervals counted at once are fed as one step, all their
	// marks first: conservative again.
	m := min(avail, iv.delivered)
	st.Marked += m
	st.Clean += iv.delivered - m
	a.pending = avail - m
}

// Losses is retransmissions − DSACK duplicates since Start (never below
// 0).
func (a *Accountant) Losses() int64 { return max(0, a.Retrans-a.DSACK) }

// Pending is the marks not yet matched with a delivered segment.
func (a *Accountant) Pending() int64 { return a.pending }

// Feed gives a step to the SPRT, marks first, packet by packet, and
// returns the decision (it stops feeding once decided).
func Feed(s *mbm.SPRT, st Step) mbm.Decision {
	for i := int64(0); i < st.Marked && s.Decision() == mbm.Continue; i++ {
		s.Observe(true)
	}
	for i := int64(0); i < st.Clean && s.Decision() == mbm.Continue; i++ {
		s.Observe(false)
	}
	return s.Decision()
}

// Flush counts the intervals still held back and feeds them, then the
// marks still pending as marked packets (segments sent, and lost, in the
// test period whose retransmissions were not yet delivered), at the end
// of a test. A decided SPRT does not move; the totals are counted still.
func (a *Accountant) Flush(s *mbm.SPRT) mbm.Decision {
	for _, iv := range a.queue {
		var st Step
		a.count(&st, iv)
		Feed(s, st)
	}
	a.queue = a.queue[:0]
	st := Step{Marked: a.pending}
	a.pending = 0
	return Feed(s, st)
}

// RateWindow is the delivery rate over a sliding window of samples
// (the precondition: a sustained rate ≥ fraction × target). It keeps the
// window's samples, so that a shortfall can be explained by what the
// kernel says limited the sender over the same span.
type RateWindow struct {
	span time.Duration
	pts  []Counters
}

// maxRatePoints bounds a window's samples (a 16 s window at 1 ms).
const maxRatePoints = 1 << 14

// NewRateWindow returns a window of the given span.
func NewRateWindow(span time.Duration) *RateWindow { return &RateWindow{span: span} }

// Add records a sample. A counter or clock that went backwards restarts
// the window.
func (w *RateWindow) Add(c Counters) {
	if n := len(w.pts); n > 0 && (c.BytesAcked < w.pts[n-1].BytesAcked || c.T < w.pts[n-1].T) {
		w.pts = w.pts[:0]
	}
	w.pts = append(w.pts, c)
	// Keep as the window's start the newest sample at least span old.
	i := 0
	for i+1 < len(w.pts) && c.T-w.pts[i+1].T >= w.span {
		i++
	}
	if i == 0 && len(w.pts) > maxRatePoints {
		i = len(w.pts) - maxRatePoints
	}
	if i > 0 {
		w.pts = append(w.pts[:0], w.pts[i:]...)
	}
}

// Rate is the delivery rate in bit/s (of bytes acknowledged) over the
// last span; ok is false until the samples cover a whole span.
func (w *RateWindow) Rate() (bps float64, ok bool) {
	if len(w.pts) < 2 {
		return 0, false
	}
	a, b := w.pts[0], w.pts[len(w.pts)-1]
	if b.T-a.T < w.span {
		return 0, false
	}
	return float64(b.BytesAcked-a.BytesAcked) * 8 / (b.T - a.T).Seconds(), true
}

// Whole is the share of the writes in the window that left whole (1
// with no write).
func (w *RateWindow) Whole() float64 {
	if len(w.pts) < 2 {
		return 1
	}
	a, b := w.pts[0], w.pts[len(w.pts)-1]
	if n := b.Writes - a.Writes; n > 0 {
		return float64(b.WholeWrites-a.WholeWrites) / float64(n)
	}
	return 1
}

// Limits says what limited the sender over the window: the shares of
// busy time limited by the receiver's window and the sender's buffer,
// and the share of samples in which the socket held no unsent data (the
// application did not keep it supplied).
func (w *RateWindow) Limits() (rwndPct, sndbufPct, notsentEmptyPct float64) {
	if len(w.pts) < 2 {
		return 0, 0, 0
	}
	return limits(w.pts[0], w.pts[len(w.pts)-1], w.pts[1:])
}

// CwndLimited is the share (%) of the window's samples in which the
// congestion window held the flow back: in flight at least cwnd − 2
// (TSO sends in chunks; a paced flow the path carries keeps well below).
func (w *RateWindow) CwndLimited() float64 {
	if len(w.pts) < 2 {
		return 0
	}
	n := 0
	for _, c := range w.pts[1:] {
		if c.Unacked+2 >= c.Cwnd {
			n++
		}
	}
	return 100 * float64(n) / float64(len(w.pts)-1)
}

// limits is Limits between two samples, with the samples after the
// first for the unsent share.
func limits(a, b Counters, samples []Counters) (rwndPct, sndbufPct, notsentEmptyPct float64) {
	if busy := float64(b.BusyUs) - float64(a.BusyUs); busy > 0 {
		rwndPct = 100 * max(0, float64(b.RwndLimitedUs)-float64(a.RwndLimitedUs)) / busy
		sndbufPct = 100 * max(0, float64(b.SndbufLimitedUs)-float64(a.SndbufLimitedUs)) / busy
	}
	empty := 0
	for _, c := range samples {
		if c.NotsentBytes == 0 {
			empty++
		}
	}
	if len(samples) > 0 {
		notsentEmptyPct = 100 * float64(empty) / float64(len(samples))
	}
	return min(rwndPct, 100), min(sndbufPct, 100), notsentEmptyPct
}
