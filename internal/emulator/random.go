package emulator

import (
	"math"
	"math/rand/v2"
	"time"
)

// Each random process draws from its own stream, so that changing one (say,
// adding jitter) does not change another's pattern (the loss sequence) for
// the same seed.
const (
	streamLoss uint64 = iota + 1
	streamGE
	streamBER
	streamDup
	streamJitter
	streamAQM
	streamFlow
)

func newStream(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream*0x9e3779b97f4a7c15))
}

// lossModel decides random loss per packet.
type lossModel struct {
	bern, ge, ber *rand.Rand
	bad           bool // Gilbert–Elliott state
}

func newLossModel(seed uint64) lossModel {
	return lossModel{
		bern: newStream(seed, streamLoss),
		ge:   newStream(seed, streamGE),
		ber:  newStream(seed, streamBER),
	}
}

// lost reports whether a packet of size bytes is lost. Each configured
// process draws independently; a packet is lost if any of them loses it.
// The Gilbert–Elliott step follows netem: the loss probability is the one of
// the state the packet finds, and the state moves on for the next packet.
func (m *lossModel) lost(p *Params, size int) bool {
	lost := false
	if p.Loss > 0 && m.bern.Float64() < p.Loss {
		lost = true
	}
	if g := p.GE; g != nil {
		lossP := 1 - g.K
		if m.bad {
			lossP = 1 - g.H
			if m.ge.Float64() < g.R {
				m.bad = false
			}
		} else if m.ge.Float64() < g.P {
			m.bad = true
		}
		if m.ge.Float64() < lossP {
			lost = true
		}
	}
	if p.BER > 0 && m.ber.Float64() < BERLoss(p.BER, size) {
		lost = true
	}
	return lost
}

// BERLoss is the probability that a packet of size bytes has at least one
// bit error: 1 − (1 − BER)^(8·size).
func BERLoss(ber float64, size int) float64 {
	return -math.Expm1(float64(8*size) * math.Log1p(-ber))
}

// jitter draws the variation added to the propagation delay.
func jitter(r *rand.Rand, p *Params) time.Duration {
	if p.Jitter <= 0 {
		return 0
	}
	j := float64(p.Jitter)
	switch p.JitterDist {
	case Normal:
		return time.Duration(r.NormFloat64() * j)
	case Pareto:
		a := p.ParetoShape
		if a == 0 {
			a = 3
		}
		// Pareto(xm, a) has sd xm/(a−1)·√(a/(a−2)); choose xm for sd = j,
		// then centre on the mean so that Delay stays the mean delay.
		xm := j * (a - 1) * math.Sqrt((a-2)/a)
		x := xm * math.Pow(1-r.Float64(), -1/a)
		return time.Duration(x - a*xm/(a-1))
	default:
		return time.Duration((2*r.Float64() - 1) * j)
	}
}
