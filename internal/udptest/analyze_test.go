package udptest

import (
	"math"
	"testing"

	"github.com/sonde-project/sonde/internal/stamp"
)

// synthRun builds a 10-probe run: probes 2 and 3 lost on the way out, the
// reply to 6 lost on the way back, the reply to 9 late (4 s), 5 ms out and
// 7 ms back otherwise, on a shared clock.
func synthRun() (*stamp.Run, *stamp.SessionReport) {
	const ms = int64(1e6)
	run := &stamp.Run{Sent: 10, Sends: make([]stamp.SendRecord, 10), Replies: make([]stamp.ReplyRecord, 10), KernelTS: true}
	rep := &stamp.SessionReport{Bitmap: make([]byte, 2), Reflected: 8, Received: 8}
	refl := uint32(0)
	for i := range 10 {
		t1 := int64(i) * 10 * ms
		run.Sends[i] = stamp.SendRecord{Deadline: t1, T1: t1 + 1000}
		if i == 2 || i == 3 {
			continue
		}
		rep.Bitmap[i/8] |= 1 << (i % 8)
		r := stamp.ReplyRecord{Got: true, T2: t1 + 1000 + 5*ms, ReflSeq: refl, TOS: -1, TTL: -1}
		refl++
		r.T3 = r.T2 + 10_000
		r.T4 = r.T3 + 7*ms
		if i == 9 {
			r.T4 = t1 + 4000*ms
		}
		if i != 6 {
			run.Replies[i] = r
		}
	}
	return run, rep
}

func TestAnalyzeSplitsLossByDirection(t *testing.T) {
	run, rep := synthRun()
	f := Analyze(Input{Run: run, Report: rep, Shared: true, Timeout: 3})
	if f.Forward.Sent != 10 || f.Forward.Lost != 2 || f.Forward.Late != 0 {
		t.Errorf("forward sent/lost/late %d/%d/%d, want 10/2/0", f.Forward.Sent, f.Forward.Lost, f.Forward.Late)
	}
	if lp := f.Forward.LossPattern; lp.Periods != 1 || lp.PeriodLength.Max != 2 {
		t.Errorf("forward loss pattern %+v", lp)
	}
	if f.Backward.Sent != 8 || f.Backward.Lost != 2 || f.Backward.Late != 1 {
		t.Errorf("backward sent/lost/late %d/%d/%d, want 8/2 (one late)/1", f.Backward.Sent, f.Backward.Lost, f.Backward.Late)
	}
	if f.Replies != 6 {
		t.Errorf("replies in time %d, want 6", f.Replies)
	}
	if math.Abs(f.Forward.OWDMs.P50-5) > 1e-6 || math.Abs(f.Backward.OWDMs.P50-7) > 1e-6 {
		t.Errorf("one-way delays %.6f / %.6f, want 5 / 7", f.Forward.OWDMs.P50, f.Backward.OWDMs.P50)
	}
	if f.Forward.JitterMs > 1e-9 || f.Backward.JitterMs > 1e-9 {
		t.Errorf("jitter of constant delays %v / %v", f.Forward.JitterMs, f.Backward.JitterMs)
	}
	if math.Abs(f.RTTMs.P50-12) > 1e-6 {
		t.Errorf("RTT %v, want 12", f.RTTMs.P50)
	}
	if f.ScheduleErrorUs.P50 != 1 {
		t.Errorf("schedule error %v µs, want 1", f.ScheduleErrorUs.P50)
	}
}

func TestAnalyzeWithoutReport(t *testing.T) {
	run, _ := synthRun()
	f := Analyze(Input{Run: run, Timeout: 3})
	if f.Forward.Known || f.Backward.Known {
		t.Error("directions claimed known without the reflector's report")
	}
	// Without the bitmap, probe 6 (lost on the way back) cannot be told
	// from forward losses; the estimated offset still splits delays.
	if f.Forward.Lost != 3 {
		t.Errorf("forward lost %d, want 3 (round-trip view)", f.Forward.Lost)
	}
	if f.Clock.SharedClock || f.Clock.UncertaintyMs < 5.9 {
		t.Errorf("clock %+v: want an estimate with ≥ 6 ms uncertainty (half the 12 ms RTT)", f.Clock)
	}
}

func TestAnalyzeEmptyRun(t *testing.T) {
	f := Analyze(Input{Run: &stamp.Run{}, Timeout: 3})
	if f.Sent != 0 || f.RTTMs.N != 0 {
		t.Errorf("empty run %+v", f)
	}
}
