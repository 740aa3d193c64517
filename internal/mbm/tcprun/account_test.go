package tcprun

import (
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/mbm"
)

// cnt is a synthetic sample: delivered, retransmitted, DSACK duplicates,
// CE, at t ms.
func cnt(t int, delivered, retrans, dsack, ce uint32) Counters {
	return Counters{T: time.Duration(t) * time.Millisecond, Delivered: delivered, TotalRetrans: retrans, DSACKDups: dsack, DeliveredCE: ce}
}

// TestAccountantGrowthExcluded: what happened before Start (slow start's
// losses) is never counted, and the baseline is the sample at Start.
func TestAccountantGrowthExcluded(t *testing.T) {
	var a Accountant
	for _, c := range []Counters{cnt(0, 0, 0, 0, 0), cnt(10, 100, 6, 0, 0), cnt(20, 300, 9, 1, 2)} {
		if st := a.Add(c); st != (Step{}) {
			t.Fatalf("before Start: step %+v, want nothing counted", st)
		}
	}
	a.Start(cnt(30, 400, 9, 1, 2), 0)
	st := a.Add(cnt(40, 450, 9, 1, 2))
	if st.Marked != 0 || st.Clean != 50 || a.Losses() != 0 || a.Delivered != 50 {
		t.Fatalf("after Start: step %+v losses %d delivered %d, want 50 clean, no loss", st, a.Losses(), a.Delivered)
	}
}

// TestAccountantRetransMinusDSACK: losses are retransmissions − DSACK
// duplicates; a spurious retransmission reported in the same sample is
// no mark; one whose DSACK comes later was counted and stays counted
// (a fed mark cannot be taken back), while the totals stay exact.
func TestAccountantRetransMinusDSACK(t *testing.T) {
	var a Accountant
	a.Start(cnt(0, 1000, 10, 5, 0), 0)
	steps := []struct {
		c            Counters
		marked, clea int64
	}{
		{cnt(10, 1100, 13, 6, 0), 2, 98},  // 3 retrans, 1 DSACK: 2 losses
		{cnt(20, 1200, 15, 8, 0), 0, 100}, // 2 retrans, 2 DSACK: none
		{cnt(30, 1300, 16, 8, 0), 1, 99},  // 1 real loss
		{cnt(40, 1400, 16, 9, 0), 0, 100}, // a late DSACK: already counted
		{cnt(50, 1500, 17, 9, 0), 0, 100}, // the retrans the late DSACK balanced: high-water not exceeded
		{cnt(60, 1600, 18, 9, 0), 1, 99},  // a new loss
	}
	var marked int64
	for i, s := range steps {
		st := a.Add(s.c)
		if st.Marked != s.marked || st.Clean != s.clea {
			t.Errorf("sample %d: marked %d clean %d, want %d, %d", i, st.Marked, st.Clean, s.marked, s.clea)
		}
		marked += st.Marked
	}
	if a.Retrans != 8 || a.DSACK != 4 || a.Losses() != 4 || marked != 4 || a.Delivered != 600 {
		t.Errorf("totals: retrans %d dsack %d losses %d marked %d delivered %d, want 8, 4, 4, 4, 600", a.Retrans, a.DSACK, a.Losses(), marked, a.Delivered)
	}
}

// TestAccountantHold: with a hold, an interval is counted only once the
// hold has passed, against the DSACKs reported by then: a spurious
// retransmission whose DSACK comes within the hold is no mark, and the
// interval's deliveries wait with its marks (the order is kept).
func TestAccountantHold(t *testing.T) {
	var a Accountant
	a.Start(cnt(0, 0, 0, 0, 0), 25*time.Millisecond)
	for _, c := range []struct {
		s             Counters
		marked, clean int64
	}{
		{cnt(10, 100, 1, 0, 0), 0, 0},   // a retransmission, held
		{cnt(20, 200, 1, 0, 0), 0, 0},   // held
		{cnt(30, 300, 2, 1, 0), 0, 0},   // its DSACK; a second retransmission
		{cnt(40, 400, 2, 1, 0), 0, 100}, // t=10 counted: spurious, no mark
		{cnt(50, 500, 2, 1, 0), 0, 100}, // t=20
		{cnt(60, 600, 2, 1, 0), 1, 99},  // t=30: the second one, no DSACK: a loss
	} {
		st := a.Add(c.s)
		if st.Marked != c.marked || st.Clean != c.clean {
			t.Errorf("t=%v: marked %d clean %d, want %d, %d", c.s.T, st.Marked, st.Clean, c.marked, c.clean)
		}
	}
	s := testPlan(t).NewSPRT()
	a.Flush(s)
	if s.Packets() != 300 || s.Marks() != 0 || a.Delivered != 600 || a.Losses() != 1 {
		t.Errorf("flush: SPRT n %d m %d, delivered %d losses %d; want 300, 0, 600, 1", s.Packets(), s.Marks(), a.Delivered, a.Losses())
	}
}

// TestAccountantCEAndPending: CE marks count; marks without a delivered
// segment in their sample wait for the next, and Flush feeds the rest.
func TestAccountantCEAndPending(t *testing.T) {
	var a Accountant
	a.Start(cnt(0, 0, 0, 0, 0), 0)
	if st := a.Add(cnt(10, 1, 3, 0, 1)); st.Marked != 1 || st.Clean != 0 || a.Pending() != 3 {
		t.Fatalf("step %+v pending %d: want 1 marked, 3 pending", st, a.Pending())
	}
	if st := a.Add(cnt(20, 11, 3, 0, 1)); st.Marked != 3 || st.Clean != 7 || a.Pending() != 0 {
		t.Fatalf("step %+v pending %d: want 3 marked, 7 clean", st, a.Pending())
	}
	a.Add(cnt(30, 11, 5, 0, 1))
	plan := testPlan(t)
	s := plan.NewSPRT()
	a.Flush(s)
	if s.Packets() != 2 || s.Marks() != 2 || a.Pending() != 0 {
		t.Errorf("flush: SPRT n %d m %d pending %d, want 2, 2, 0", s.Packets(), s.Marks(), a.Pending())
	}
}

// TestAccountantReset: a counter that goes backwards (a reset, a new
// connection) counts nothing for that interval, never a negative or huge
// delta, and counting resumes from the new values; a genuine 32-bit wrap
// is a small forward step.
func TestAccountantReset(t *testing.T) {
	var a Accountant
	a.Start(cnt(0, 5000, 10, 0, 0), 0)
	a.Add(cnt(10, 5100, 10, 0, 0))
	st := a.Add(cnt(20, 50, 0, 0, 0))
	if !st.Reset || st.Marked != 0 || st.Clean != 0 || a.Resets != 1 {
		t.Fatalf("reset: step %+v resets %d", st, a.Resets)
	}
	st = a.Add(cnt(30, 150, 1, 0, 0))
	if st.Reset || st.Clean+st.Marked != 100 || st.Marked != 1 || a.Delivered != 200 {
		t.Fatalf("after reset: step %+v delivered %d, want 100 with 1 marked, 200 in all", st, a.Delivered)
	}
	var w Accountant
	w.Start(cnt(0, ^uint32(0)-9, 0, 0, 0), 0)
	if st := w.Add(cnt(10, 20, 0, 0, 0)); st.Reset || st.Clean != 30 {
		t.Errorf("wrap: step %+v, want 30 clean", st)
	}
}

// TestFeedMarksFirst: within a sample the marks go first, so a sample
// with one mark can never let the walk PASS before that mark.
func TestFeedMarksFirst(t *testing.T) {
	plan := testPlan(t)
	n := plan.CheapestPass
	s := plan.NewSPRT()
	// All the clean packets a PASS needs and one mark in one sample:
	// marks first, so n clean packets after it are not yet enough.
	if d := Feed(s, Step{Marked: 1, Clean: n}); d != mbm.Continue {
		t.Fatalf("decision %v after 1 mark then %d clean, want to continue", d, n)
	}
	if s.Marks() != 1 || s.Packets() != n+1 {
		t.Errorf("SPRT n %d m %d", s.Packets(), s.Marks())
	}
	// Clean first would have passed at the n-th packet.
	s2 := plan.NewSPRT()
	if d := Feed(s2, Step{Clean: n}); d != mbm.Pass || s2.Packets() != n {
		t.Errorf("clean run: %v after %d, want PASS at %d", d, s2.Packets(), n)
	}
}

// TestRateWindow checks the sliding window's rate and its limits.
func TestRateWindow(t *testing.T) {
	w := NewRateWindow(time.Second)
	for i := 0; i <= 200; i++ {
		// 1.25 MB/s = 10 Mbit/s, sampled every 10 ms; the second half
		// sender-buffer limited half of its busy time.
		c := Counters{T: time.Duration(i) * 10 * time.Millisecond, BytesAcked: uint64(i) * 12500,
			BusyUs: uint64(i) * 10000, NotsentBytes: 1}
		if i > 100 {
			c.SndbufLimitedUs = uint64(i-100) * 5000
		}
		w.Add(c)
		if _, ok := w.Rate(); ok != (i >= 100) {
			t.Fatalf("sample %d: full = %v", i, ok)
		}
	}
	r, _ := w.Rate()
	if r < 9.99e6 || r > 10.01e6 {
		t.Errorf("rate %g, want 10 Mbit/s", r)
	}
	rw, sb, empty := w.Limits()
	if rw != 0 || sb < 49.9 || sb > 50.1 || empty != 0 {
		t.Errorf("limits rwnd %g sndbuf %g empty %g, want 0, 50, 0", rw, sb, empty)
	}
	w.Add(Counters{T: 2010 * time.Millisecond, BytesAcked: 5}) // reset
	if _, ok := w.Rate(); ok {
		t.Error("window full after a counter reset")
	}
}

func testPlan(t testing.TB) mbm.Plan {
	t.Helper()
	p, err := mbm.NewPlan(mbm.Inputs{Target: mbm.Target{RateBps: 10e6, RTT: 20 * time.Millisecond, MTU: 1500, HeaderOverhead: 52},
		Alpha: 0.05, Beta: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzAccountant feeds arbitrary counter sequences: no step is negative,
// the marks fed never exceed the deliveries counted, and Losses equals
// the exact retransmissions − DSACK duplicates (floored at 0).
func FuzzAccountant(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 10, 1, 0, 0, 20, 2, 1, 1, 5, 0, 0, 0})
	f.Add([]byte{200, 9, 3, 1, 1, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Accountant
		var marked, fed int64
		var d, r, s, ce uint32
		for i := 0; i+4 <= len(b) && i < 4096; i += 4 {
			// Each byte moves a counter; 255 sends it backwards.
			step := func(v *uint32, x byte) {
				if x == 255 {
					*v /= 2
				} else {
					*v += uint32(x)
				}
			}
			step(&d, b[i])
			step(&r, b[i+1])
			step(&s, b[i+2])
			step(&ce, b[i+3])
			c := Counters{T: time.Duration(i) * time.Millisecond, Delivered: d, TotalRetrans: r, DSACKDups: s, DeliveredCE: ce}
			if i == 8 {
				a.Start(c, time.Duration(b[0]%50)*time.Millisecond)
				continue
			}
			st := a.Add(c)
			if st.Marked < 0 || st.Clean < 0 || st.Delivered < 0 || st.Retrans < 0 || st.DSACK < 0 || st.CE < 0 {
				t.Fatalf("negative step %+v", st)
			}
			if st.Marked+st.Clean != st.Delivered {
				t.Fatalf("step %+v: fed %d, delivered %d", st, st.Marked+st.Clean, st.Delivered)
			}
			marked += st.Marked
			fed += st.Marked + st.Clean
		}
		if a.Started() {
			if marked > fed || a.Delivered != fed || a.Pending() < 0 {
				t.Fatalf("marked %d fed %d delivered %d pending %d", marked, fed, a.Delivered, a.Pending())
			}
			if a.Losses() != max(0, a.Retrans-a.DSACK) {
				t.Fatalf("losses %d, retrans %d − dsack %d", a.Losses(), a.Retrans, a.DSACK)
			}
		}
	})
}
