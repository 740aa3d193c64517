package monitor

import (
	"math/rand/v2"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor/probe"
)

// simProber stands for the probers in tests of the loop: each simulated
// second it pushes what a STAMP prober would have drained by then (one
// sample per stream and interval, one-way delays set, one in 500 lost and
// reported a timeout later).
type simProber struct {
	targets int
	per     int64 // probe interval, ns
	rng     *rand.Rand
	seq     uint32
	next    int64 // next send time
	// down, when set, says the path is down at a send time: the probe is
	// lost (an outage for the detectors).
	down func(sentNs int64) bool
}

func newSimProber(targets int, rate float64) *simProber {
	return &simProber{targets: targets, per: int64(float64(time.Second) / rate), rng: rand.New(rand.NewPCG(1, 2))}
}

// push puts into r the samples sent up to now minus 3 s (their replies or
// timeouts have come).
func (p *simProber) push(r *probe.Ring, now int64) {
	if p.next == 0 {
		p.next = now - 3e9
	}
	for ; p.next < now-3e9; p.next += p.per {
		for s := range p.targets {
			fwd := 7e6 + p.rng.Int64N(2e6)
			smp := model.ProbeSample{Stream: int32(s), Seq: p.seq, SentNs: p.next, LatenessNs: int64(p.rng.IntN(50e3)),
				RTTNs: 15e6 + p.rng.Int64N(5e6), FwdNs: fwd, RevNs: 8e6 - fwd/2}
			if p.rng.IntN(500) == 0 || (p.down != nil && p.down(p.next)) {
				smp.RTTNs, smp.FwdNs, smp.RevNs, smp.Lost = -1, 0, 0, true
			}
			r.Push(smp)
		}
		p.seq++
	}
}
