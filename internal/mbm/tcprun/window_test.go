package tcprun

import (
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// TestFitWindow: a window of W packets (or half a segment short) fits; a
// smaller one is small, a larger one or too many in flight large; without
// tcpi_snd_wnd only the packets in flight are judged.
func TestFitWindow(t *testing.T) {
	const mss, w = 1448, 18 // slack 2
	for _, c := range []struct {
		wnd, inflight int64
		want          windowFit
		says          string
	}{
		{18 * mss, 18, windowOK, ""},
		{18*mss - mss/2, 17, windowOK, ""},
		{20 * mss, 20, windowOK, ""},
		{17 * mss, 17, windowSmall, "below W = 18"},
		{21 * mss, 18, windowLarge, "above W = 18 + 2"},
		{18 * mss, 21, windowLarge, "21 packets were in flight"},
		{0, 20, windowOK, ""},
		{0, 21, windowLarge, "no tcpi_snd_wnd"},
	} {
		got, why := fitWindow(c.wnd, c.inflight, w, mss)
		if got != c.want || !strings.Contains(why, c.says) {
			t.Errorf("window %d, %d in flight: %v %q, want %v saying %q", c.wnd, c.inflight, got, why, c.want, c.says)
		}
	}
	if s := windowSlack(4); s != 2 {
		t.Errorf("slack of W = 4: %d, want 2", s)
	}
	if s := windowSlack(100); s != 10 {
		t.Errorf("slack of W = 100: %d, want 10", s)
	}
}

// TestCorrectBuffer: a receiver that advertises less per buffer byte than
// the rule assumed gets a larger buffer, one that advertises more a
// smaller one; on a linear receiver with the fit's offset one correction
// lands within the window's slack.
func TestCorrectBuffer(t *testing.T) {
	const mss, w = 1448, 18
	for _, slope := range []float64{0.8, 1.0, 1.262, 1.6, 2.2} {
		adv := func(b int) int64 { return int64(slope*float64(b)) - rcvbufOffset }
		set := 23000
		next := correctBuffer(set, adv(set), w, mss, 2048, 4<<20)
		got := float64(adv(next)) / mss
		if got < w-0.5 || got > w+2 {
			t.Errorf("slope %.3g: buffer %d → %d advertises %.2f packets, want W = %d … W + 2", slope, set, next, got, w)
		}
	}
	// Bounded steps and bounds.
	if b := correctBuffer(20000, 1, w, mss, 2048, 4<<20); b != 80000 {
		t.Errorf("a window of 1 byte: %d, want the step bound 4 × 20000", b)
	}
	if b := correctBuffer(4096, 1<<30, w, mss, 2048, 4<<20); b != 2048 {
		t.Errorf("a huge window: %d, want the lower bound", b)
	}
	// A window already at W still moves (1 %), never sticks.
	set := 23000
	if b := correctBuffer(set, int64(w*mss+mss/2), w, mss, 2048, 4<<20); b == set {
		t.Errorf("no change from %d", set)
	}
}

// TestPerRTT: synthetic TCP_INFO series sampled every RTT/2: a window of
// W delivered each RTT is reached; one whose congestion window fell to
// W/2 is not, and its spans are counted short; a counter reset or a
// missing srtt counts nothing.
func TestPerRTT(t *testing.T) {
	const w = 18
	srtt := 20 * time.Millisecond
	series := func(perRTT func(i int) float64, n int) *PerRTT {
		p := &PerRTT{W: w, Slack: windowSlack(w)}
		var d float64
		for i := 0; i <= n; i++ {
			p.Add(time.Duration(i)*srtt/2, uint32(d), srtt)
			d += perRTT(i) / 2
		}
		return p
	}
	full := series(func(int) float64 { return w }, 200)
	if !full.Reached() || full.Mean() < w-0.5 || full.Mean() > w+0.5 || full.Short != 0 {
		t.Errorf("full window: mean %.2f over %d spans, %d short: want %d, reached", full.Mean(), full.Spans, full.Short, w)
	}
	if full.Spans != 100 {
		t.Errorf("%d spans over 100 RTTs, want 100", full.Spans)
	}
	half := series(func(i int) float64 {
		if i >= 100 {
			return w / 2
		}
		return w
	}, 200)
	if half.Reached() || half.Mean() < 13 || half.Mean() > 14 {
		t.Errorf("window halved for half the test: mean %.2f, reached %v: want about 13.5, not reached", half.Mean(), half.Reached())
	}
	if half.ShortPct() < 45 || half.ShortPct() > 55 {
		t.Errorf("window halved for half the test: %.0f %% of spans short, want about 50", half.ShortPct())
	}
	low := series(func(int) float64 { return w / 2 }, 200)
	if low.Reached() || low.Mean() > w/2+0.5 {
		t.Errorf("half window: mean %.2f reached %v, want %d, not reached", low.Mean(), low.Reached(), w/2)
	}
	// A wrap of the 32-bit counter is a small step.
	p := &PerRTT{W: w, Slack: 2}
	p.Add(0, 1<<32-9, srtt)
	p.Add(srtt, 9, srtt)
	if p.Spans != 1 || p.Mean() != w {
		t.Errorf("across a wrap: %d spans, mean %.1f, want 1, %d", p.Spans, p.Mean(), w)
	}
	// A reset (backwards) and a sample without srtt count nothing.
	p = &PerRTT{W: w, Slack: 2}
	p.Add(0, 1000, srtt)
	p.Add(srtt, 10, srtt)
	p.Add(srtt*3/2, 20, 0)
	p.Add(2*srtt, 30, srtt)
	if p.Spans != 0 || p.Reached() {
		t.Errorf("reset and no srtt: %d spans, want 0", p.Spans)
	}
	// Spans longer than an RTT (a stalled sampler) are scaled to one RTT.
	p = &PerRTT{W: w, Slack: 2}
	p.Add(0, 0, srtt)
	p.Add(3*srtt, 3*w, srtt)
	if p.Mean() != w {
		t.Errorf("a 3-RTT span of 3W: mean %.1f, want %d", p.Mean(), w)
	}
}

// windowRunner is an 8.1.2 runner after its test period: the window read
// back and the per-RTT spans given.
func windowRunner(t *testing.T, sndWnd, inflight int64, perRTT float64) *runner {
	plan := testPlan(t)
	r := &runner{cfg: Config{Plan: plan, Precondition: DefaultPrecondition}, id: TestWindowed, attempt: maxWindowAttempts}
	r.tcp.MSS, r.tcp.Samples, r.tcp.MaxSndWndBytes, r.tcp.MaxInFlight, r.tcp.WindowSlackPackets = 1448, 100, sndWnd, inflight, windowSlack(plan.W)
	r.perRTT = PerRTT{W: plan.W, Slack: windowSlack(plan.W)}
	srtt := 20 * time.Millisecond
	for i := 0; i <= 40; i++ {
		r.perRTT.Add(time.Duration(i)*srtt, uint32(float64(i)*perRTT), srtt)
	}
	return r
}

// TestWindowVerdict: a window read back off W is an ERROR whatever the
// SPRT said; fewer than W per RTT turns a PASS into INCONCLUSIVE and
// keeps a FAIL; a window of W delivered each RTT keeps the verdict, with
// the readback in the reason.
func TestWindowVerdict(t *testing.T) {
	const w, mss = 18, 1448
	pass := result{"PASS", "952 packets delivered with 0 marks"}
	fail := result{"FAIL", "5 marks in 400 packets"}
	for _, c := range []struct {
		name             string
		wnd, inflight    int64
		perRTT           float64
		in               result
		verdict, reasons string
	}{
		{"window", w * mss, w, w, pass, "PASS", "window read back: up to 26064 bytes advertised, 18 packets in flight"},
		{"large", 25 * mss, 25, w, pass, "ERROR", "above W = 18 + 2"},
		{"small", 12 * mss, 12, 12, fail, "ERROR", "below W = 18"},
		{"not filled, PASS", w * mss, w, 9, pass, "INCONCLUSIVE", "the window was not filled"},
		{"not filled, FAIL", w * mss, w, 9, fail, "FAIL", "the congestion window stayed below the window"},
	} {
		r := windowRunner(t, c.wnd, c.inflight, c.perRTT)
		got := r.windowVerdict(c.in)
		if string(got.verdict) != c.verdict || !strings.Contains(got.reason, c.reasons) {
			t.Errorf("%s: %s (%s), want %s saying %q", c.name, got.verdict, got.reason, c.verdict, c.reasons)
		}
	}
	// An ERROR (the pattern not produced before) stands as it is.
	r := windowRunner(t, 25*mss, 25, w)
	if got := r.windowVerdict(result{model.MBMError, "x"}); got.verdict != model.MBMError || got.reason != "x" {
		t.Errorf("an ERROR became %+v", got)
	}
}

// TestBurstNote: a burst test whose bursts passed the whole-burst check
// says the wire shape was not observed; one that did not pass says
// nothing of bursts written whole.
func TestBurstNote(t *testing.T) {
	plan := testPlan(t)
	r := &runner{cfg: Config{Plan: plan, Precondition: DefaultPrecondition}, id: TestSenderBurst}
	r.tcp = model.MBMTCP{BurstPackets: 46, HeadwayMs: 53, Writes: 20, WholeBurstsPct: 100, GoodputBps: plan.RateBps}
	if got := r.conform(result{"PASS", "n 952"}, nil); got.verdict != "PASS" || !strings.Contains(got.reason, "bursts written whole (100 % with the window open for all 46 packets); on-the-wire shape not observed by the sender") {
		t.Errorf("passing check: %+v", got)
	}
	r.tcp.WholeBurstsPct = 50
	if got := r.conform(result{"FAIL", "n 300"}, nil); strings.Contains(got.reason, "written whole") {
		t.Errorf("failed check: %+v", got)
	}
}

// FuzzPerRTT feeds arbitrary sample series (time steps, delivered
// counters, srtts): the spans are counted consistently and the mean is
// finite and never negative.
func FuzzPerRTT(f *testing.F) {
	f.Add([]byte{10, 0, 20, 10, 9, 20, 10, 18, 20, 10, 27, 20})
	f.Add([]byte{0, 255, 0, 1, 0, 0, 200, 1, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := PerRTT{W: 18, Slack: 2}
		var at time.Duration
		var d uint32
		for i := 0; i+2 < len(b); i += 3 {
			at += time.Duration(b[i]) * time.Millisecond
			d += uint32(b[i+1]) * 97 // sometimes a wrap
			if b[i+1] == 255 {
				d = 0 // a reset
			}
			p.Add(at, d, time.Duration(b[i+2])*time.Millisecond)
		}
		if p.Short > p.Spans || p.Mean() < 0 || p.Mean() != p.Mean() || p.ShortPct() > 100 {
			t.Fatalf("spans %d short %d mean %g", p.Spans, p.Short, p.Mean())
		}
	})
}
