package udprun

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
)

// RFC 8337 §8.3.2, slowstart AQM: send continuously at twice the target
// rate (slowstart's rate) until the first loss or CE mark, stop, let the
// queue drain, repeat; record per round the packets delivered before the
// first mark, the losses and CE marks, the largest RTT, and the queue
// sojourn of the first packet delivered after the first mark. The RFC
// sets no pass criterion for this test (it asks for the statistics and
// their justification: "there is not currently sufficient theory to
// justify requiring any particular result"). sonde's verdict is its own
// engineering criterion, named as such in the reason: that sojourn should
// be at least half the target RTT, since an AQM that signals sooner stops
// a slowstart before it reaches the target window. It is taken on the
// median round.
const (
	aqmRounds = 3
	// aqmPause is the drain between rounds: longer than CoDel's memory of
	// its last dropping state (16 intervals of 100 ms), so every round
	// meets the AQM afresh.
	aqmPause = 2 * time.Second
	// aqmMinPackets is the least bound of a round (32 W otherwise): a
	// queue longer than that is not reached.
	aqmMinPackets = 1000
)

// aqmData is one 8.3.2 run's record: the input of analyzeAQM.
type aqmData struct {
	base, targetRTT time.Duration
	rateBps         float64 // the sending rate asked for (twice the target)
	packetBit       float64
	minRateFraction float64
	rounds          []scanStep // from, to of each round
	sendNs, rttNs   []int64
	fate            []uint8
}

func runAQM(ctx context.Context, api *apiclient.Client, cfg Config) ([]model.MBMTest, error) {
	p := cfg.Plan
	r := 2 * p.RateBps
	bound := max(32*p.W, aqmMinPackets)
	packets := scanBaseProbes + aqmRounds*(bound+4*p.W)
	d := aqmData{targetRTT: p.RTT, rateBps: r, packetBit: float64(p.MTU * 8), minRateFraction: cfg.MinRateFraction}
	gap := time.Duration(d.packetBit / r * 1e9)
	roundTime := time.Duration(bound)*gap + stallTimeout(p) + aqmPause
	l, rep, err := openLoop(ctx, api, cfg, TestAQM, r, packets, (time.Duration(aqmRounds)*roundTime + 10*time.Second).Seconds())
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { defer close(done); l.run() }()
	sendErr := l.aqmRounds(ctx, &d, p, bound, gap)
	_ = l.waitUntilFor(ctx, stallTimeout(p), func(s loopState) bool { return s.final >= s.sent })
	final, endErr := l.finish(ctx, api, rep, "", "slowstart AQM rounds: the client's result has the verdict")
	<-done
	l.mu.Lock()
	d.sendNs, d.rttNs, d.fate = l.sendNs[:l.sent], l.rttNs[:l.sent], l.fate[:l.sent]
	sent, sendErrs, gaps := l.sent, l.sendErrs, l.gaps
	l.mu.Unlock()
	a, v := analyzeAQM(&d)
	name, _ := TestName(TestAQM)
	t := model.MBMTest{ID: TestAQM, Name: name, Transport: "udp", UDP: &model.MBMUDP{
		Pattern:       fmt.Sprintf("1 packet every %s (twice the target rate) until the first loss or CE mark (at most %d packets), then %s of silence; %d rounds", gap, bound, aqmPause, aqmRounds),
		GrowthPackets: scanBaseProbes, PacketsSent: sent, SendErrors: sendErrs, FeedbackGaps: gaps, MinRateFraction: cfg.MinRateFraction, AQM: a}}
	if endErr == nil {
		t.UDP.Reordered, t.UDP.Duplicates, t.UDP.Late = final.Reordered, final.Duplicates, final.Late
		t.UDP.ReceiverRateBps, t.UDP.ReceiverMinRateBps = final.RateBps, final.MinRateBps
	}
	for _, rd := range a.Rounds {
		t.Packets += rd.Packets
		t.Losses += rd.Losses
		t.CE += rd.CE
	}
	t.Marks = t.Losses + t.CE
	if t.Packets > 0 {
		t.Loss = float64(t.Marks) / float64(t.Packets)
	}
	t.LossLow, t.LossHigh = mbm.Wilson(t.Marks, t.Packets)
	switch {
	case sendErr != nil && !errors.Is(sendErr, errGrantOver):
		t.Verdict, t.Reason = model.MBMError, fmt.Sprintf("stopped after %d packets: %v", sent, sendErr)
		return []model.MBMTest{t}, fmt.Errorf("test %s: %w", TestAQM, sendErr)
	case endErr != nil:
		t.Verdict, t.Reason = model.MBMError, fmt.Sprintf("server gone after %d packets (partial result): %v", sent, endErr)
		return []model.MBMTest{t}, fmt.Errorf("test %s: %w", TestAQM, endErr)
	case sendErrs > 0:
		t.Verdict, t.Reason = model.MBMInconclusive, fmt.Sprintf("pattern not produced: this host refused to send %d packets", sendErrs)
	default:
		t.Verdict, t.Reason = v.verdict, v.reason
	}
	return []model.MBMTest{t}, nil
}

// aqmRounds sends the base probes and the rounds into d.
func (l *loop) aqmRounds(ctx context.Context, d *aqmData, p mbm.Plan, bound int64, gap time.Duration) error {
	base, err := l.baseRTT(ctx, scanBaseProbes, stallTimeout(p))
	if err != nil {
		return err
	}
	d.base = base
	for range aqmRounds {
		from := l.state().sent
		l.mu.Lock()
		l.first, l.markFrom = -1, from
		l.mu.Unlock()
		next := time.Now()
		for l.state().sent-from < bound {
			if l.state().firstMark >= from {
				break
			}
			if err := l.waitUntil(ctx, func(loopState) bool { return !time.Now().Before(next) }); err != nil {
				d.rounds = appendStep(d.rounds, scanStep{from: from}, l.state().sent)
				return err
			}
			ok, err := l.send()
			if err != nil || !ok {
				d.rounds = appendStep(d.rounds, scanStep{from: from}, l.state().sent)
				if err == nil {
					err = errGrantOver
				}
				return err
			}
			next = next.Add(gap) // absolute deadlines: a late sender sends its backlog, as slowstart would
		}
		d.rounds = append(d.rounds, scanStep{from: from, to: l.state().sent})
		// Drain: every fate in (bounded), then the pause.
		sent := l.state().sent
		if err := l.waitUntilFor(ctx, stallTimeout(p), func(s loopState) bool { return s.final >= sent }); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(aqmPause):
		}
	}
	return nil
}

// analyzeAQM derives the rounds and the verdict from the record (pure).
func analyzeAQM(d *aqmData) (*model.MBMAQM, scanVerdict) {
	a := &model.MBMAQM{BaseRTTMs: float64(d.base) / 1e6, RateBps: d.rateBps}
	n := int64(len(d.fate))
	var sojourns []time.Duration
	slow := 0
	for _, r := range d.rounds {
		rd := model.MBMAQMRound{Packets: r.to - r.from, FirstMark: -1}
		var maxRTT int64
		for seq := r.from; seq < r.to && seq < n; seq++ {
			f := d.fate[seq]
			switch f {
			case fateLost:
				rd.Losses++
			case fateCE:
				rd.CE++
			}
			if (f == fateLost || f == fateCE) && rd.FirstMark < 0 {
				rd.FirstMark = seq
			}
			if rd.FirstMark < 0 && f == fateArrived {
				rd.DeliveredBeforeMark++
			}
			maxRTT = max(maxRTT, d.rttNs[seq])
		}
		rd.MaxRTTMs = float64(maxRTT) / 1e6
		if rd.FirstMark >= 0 {
			for seq := rd.FirstMark + 1; seq < min(r.to, n); seq++ {
				if d.fate[seq] != fateLost && d.rttNs[seq] > 0 {
					s := max(time.Duration(d.rttNs[seq])-d.base, 0)
					rd.SojournAfterMarkMs = float64(s) / 1e6
					sojourns = append(sojourns, s)
					break
				}
			}
		}
		// The sender's rate over the round: slowstart's pattern produced?
		if last := min(r.to, n) - 1; last > r.from+1 && d.sendNs[last] > d.sendNs[r.from] {
			bps := float64(last-r.from) * d.packetBit / (float64(d.sendNs[last]-d.sendNs[r.from]) / 1e9)
			if bps < d.minRateFraction*d.rateBps {
				slow++
			}
		}
		a.Rounds = append(a.Rounds, rd)
	}
	half := d.targetRTT / 2
	switch {
	case len(a.Rounds) == 0:
		return a, scanVerdict{model.MBMError, "no round sent"}
	case slow > 0:
		return a, scanVerdict{model.MBMInconclusive, fmt.Sprintf("pattern not produced: in %d of %d rounds the sender stayed below %.2g × twice the target rate", slow, len(a.Rounds), d.minRateFraction)}
	case len(sojourns) == 0:
		return a, scanVerdict{model.MBMInconclusive, fmt.Sprintf("no loss or CE mark in %d rounds of up to %d packets at twice the target rate: no AQM or queue limit reached", len(a.Rounds), a.Rounds[0].Packets)}
	}
	slices.Sort(sojourns)
	med := sojourns[len(sojourns)/2]
	var lost, ce int64
	for _, rd := range a.Rounds {
		lost += rd.Losses
		ce += rd.CE
	}
	what := fmt.Sprintf("%d losses and %d CE marks in %d rounds (%d with a mark)", lost, ce, len(a.Rounds), len(sojourns))
	if med >= half {
		return a, scanVerdict{model.MBMPass, fmt.Sprintf("the first packet after the first loss or mark had queued %s (median round), at least half the target RTT (%s: sonde's criterion, RFC 8337 sets none); %s", med.Round(100*time.Microsecond), half, what)}
	}
	return a, scanVerdict{model.MBMFail, fmt.Sprintf("early signal: the first packet after the first loss or mark had queued only %s (median round), less than half the target RTT (%s: sonde's criterion, RFC 8337 sets none); %s", med.Round(100*time.Microsecond), half, what)}
}
