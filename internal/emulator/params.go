// Package emulator is sonde's link model: a deterministic, clock-free
// description of one direction of an emulated link (rate, propagation delay,
// jitter, loss, duplication, a bounded queue with drop-tail, CoDel, PIE or
// FQ-CoDel, MTU; optionally one half-duplex medium shared by a link's two
// directions, HalfDuplex), the ground-truth record format it produces, and the packet
// helpers it needs (ECN marking, flow and identity hashes, ICMP
// "fragmentation needed"). It never touches sockets or clocks: a driver
// (package emulator/forward, or a unit test with a virtual clock) feeds it
// packets with their arrival times and asks which packets are due.
package emulator

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Qdisc names a queue discipline.
type Qdisc string

// The queue disciplines the model implements.
const (
	DropTail Qdisc = "droptail"
	CoDel    Qdisc = "codel"
	PIE      Qdisc = "pie"
	FQCoDel  Qdisc = "fq_codel"
)

// Dist names a jitter distribution.
type Dist string

// Jitter distributions. All have mean zero and standard deviation equal to
// Params.Jitter, except Uniform, which spans [-Jitter, +Jitter] (standard
// deviation Jitter/√3, as netem's default).
const (
	Uniform Dist = "uniform"
	Normal  Dist = "normal"
	Pareto  Dist = "pareto"
)

// DefaultLimitPackets is the queue limit when none is given (Linux's
// txqueuelen and the codel/pie default).
const DefaultLimitPackets = 1000

// GilbertElliott is netem's "loss gemodel p r 1-h 1-k": a two-state Markov
// chain evaluated once per packet.
type GilbertElliott struct {
	P float64 `json:"p"` // transition probability Good → Bad
	R float64 `json:"r"` // transition probability Bad → Good
	K float64 `json:"k"` // probability of delivery in Good (loss 1-k)
	H float64 `json:"h"` // probability of delivery in Bad (loss 1-h)
}

// MeanLoss is the stationary loss probability of the chain.
func (g GilbertElliott) MeanLoss() float64 {
	if g.P+g.R == 0 {
		return 1 - g.K
	}
	pb := g.P / (g.P + g.R)
	return (1-pb)*(1-g.K) + pb*(1-g.H)
}

// Params configures one direction of a link. The zero value is an ideal
// wire (no rate limit, no delay, no loss) with a drop-tail queue of
// DefaultLimitPackets.
type Params struct {
	// RateBps is the serialisation rate in bit/s; 0 means unlimited.
	RateBps float64 `json:"rate_bps"`
	// Delay is the one-way propagation delay added after serialisation.
	Delay time.Duration `json:"delay_ns"`
	// Jitter varies Delay per packet with distribution JitterDist.
	Jitter     time.Duration `json:"jitter_ns,omitempty"`
	JitterDist Dist          `json:"jitter_dist,omitempty"`
	// ParetoShape is the tail index of the Pareto jitter (default 3, must
	// exceed 2 so that the variance exists).
	ParetoShape float64 `json:"pareto_shape,omitempty"`
	// Reorder lets a packet with less jitter overtake earlier ones; by
	// default the link is FIFO like a real one.
	Reorder bool `json:"reorder,omitempty"`
	// Loss is an independent (Bernoulli) loss probability.
	Loss float64 `json:"loss,omitempty"`
	// GE adds Gilbert–Elliott bursty loss.
	GE *GilbertElliott `json:"gilbert_elliott,omitempty"`
	// BER adds size-dependent loss 1-(1-BER)^(8·size).
	BER float64 `json:"ber,omitempty"`
	// Duplicate is the probability that a packet is sent twice.
	Duplicate float64 `json:"duplicate,omitempty"`
	// LimitPackets and LimitBytes bound the queue (both may be set; 0 means
	// no limit of that kind; both 0 means DefaultLimitPackets).
	LimitPackets int `json:"limit_packets,omitempty"`
	LimitBytes   int `json:"limit_bytes,omitempty"`
	// Qdisc is the queue discipline (default DropTail).
	Qdisc Qdisc `json:"qdisc,omitempty"`
	// ECN marks ECN-capable packets instead of dropping them when an AQM
	// decides to signal congestion.
	ECN bool `json:"ecn,omitempty"`
	// Target and Interval override the AQM defaults (CoDel 5 ms / 100 ms,
	// PIE target 15 ms; Interval is PIE's T_update).
	Target   time.Duration `json:"target_ns,omitempty"`
	Interval time.Duration `json:"interval_ns,omitempty"`
	// MTU is the largest IP packet the link carries; 0 means no limit.
	MTU int `json:"mtu,omitempty"`
	// Remark rewrites the DSCP of packets crossing the link, as a
	// misconfigured or policing network does.
	Remark *Remark `json:"remark,omitempty"`
	// HalfDuplex makes the two directions of the link share one medium
	// (see HalfDuplex): it must be set on both or neither.
	HalfDuplex bool `json:"half_duplex,omitempty"`
	// Hold is how long this direction keeps a half-duplex medium, once it
	// has it, while it has backlog and the other direction waits
	// (HoldUntilDrained: until its queue is empty). 0: the direction that
	// has waited longest takes the medium at every packet.
	Hold time.Duration `json:"hold_ns,omitempty"`
	// Turnaround is the time a half-duplex medium takes to change
	// direction to this one (a radio's switch from receive to transmit):
	// a packet that follows one of the other direction starts no sooner.
	Turnaround time.Duration `json:"turnaround_ns,omitempty"`
}

// HoldUntilDrained is the Hold of a direction that keeps the medium until
// its queue is empty, as the half-duplex links of RFC 8337 §8.2.4 do.
const HoldUntilDrained = time.Duration(math.MaxInt64)

// MaxHold bounds a finite Hold, MaxTurnaround the Turnaround.
const (
	MaxHold       = 10 * time.Second
	MaxTurnaround = time.Second
)

// Remark rewrites DSCP From (-1: any) to To.
type Remark struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Step changes a direction's parameters at a time since the start.
type Step struct {
	At     time.Duration `json:"at_ns"`
	Params Params        `json:"params"`
}

// Validate refuses impossible or meaningless parameters with the reason.
func (p Params) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	prob := func(name string, v float64) {
		if math.IsNaN(v) || v < 0 || v > 1 {
			bad("%s %v is not a probability in [0, 1]", name, v)
		}
	}
	if math.IsNaN(p.RateBps) || math.IsInf(p.RateBps, 0) || p.RateBps < 0 {
		bad("rate %v bit/s must be ≥ 0 (0 means unlimited)", p.RateBps)
	} else if p.RateBps > 0 && p.RateBps < 1000 {
		bad("rate %v bit/s is below 1 kbit/s", p.RateBps)
	}
	if p.Delay < 0 {
		bad("delay %v is negative", p.Delay)
	}
	if r := p.Remark; r != nil && (r.From < -1 || r.From > 63 || r.To < 0 || r.To > 63) {
		bad("remark %d:%d: DSCP values are 0-63", r.From, r.To)
	}
	if p.Jitter < 0 {
		bad("jitter %v is negative", p.Jitter)
	}
	switch p.JitterDist {
	case "", Uniform, Normal:
	case Pareto:
		if p.ParetoShape != 0 && p.ParetoShape <= 2 {
			bad("pareto shape %v must exceed 2", p.ParetoShape)
		}
	default:
		bad("jitter distribution %q unknown (uniform, normal, pareto)", p.JitterDist)
	}
	prob("loss", p.Loss)
	prob("duplicate", p.Duplicate)
	if p.BER < 0 || p.BER >= 1 || math.IsNaN(p.BER) {
		bad("bit error rate %v must be in [0, 1)", p.BER)
	}
	if g := p.GE; g != nil {
		prob("gilbert-elliott p", g.P)
		prob("gilbert-elliott r", g.R)
		prob("gilbert-elliott k", g.K)
		prob("gilbert-elliott h", g.H)
	}
	if p.LimitPackets < 0 || p.LimitBytes < 0 {
		bad("queue limit must be positive")
	}
	switch p.Qdisc {
	case "", DropTail, CoDel, PIE, FQCoDel:
	default:
		bad("queue discipline %q unknown (droptail, codel, pie, fq_codel)", p.Qdisc)
	}
	if p.Target < 0 || p.Interval < 0 {
		bad("AQM target and interval must be positive")
	}
	if p.MTU != 0 && (p.MTU < 68 || p.MTU > 65535) {
		bad("mtu %d outside [68, 65535]", p.MTU)
	}
	switch {
	case p.Hold < 0 || (p.Hold > MaxHold && p.Hold != HoldUntilDrained):
		bad("hold %v outside [0, %v] (or drain)", p.Hold, MaxHold)
	case p.Turnaround < 0 || p.Turnaround > MaxTurnaround:
		bad("turnaround %v outside [0, %v]", p.Turnaround, MaxTurnaround)
	case (p.Hold != 0 || p.Turnaround != 0) && !p.HalfDuplex:
		bad("hold and turnaround need duplex=half")
	case p.HalfDuplex && p.RateBps == 0:
		bad("duplex=half needs a rate: an unlimited medium is never busy")
	}
	if len(errs) == 0 {
		return nil
	}
	// One line: the reasons are short and read together.
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// limits returns the effective queue limits.
func (p Params) limits() (pkts, bytes int) {
	if p.LimitPackets == 0 && p.LimitBytes == 0 {
		return DefaultLimitPackets, 0
	}
	return p.LimitPackets, p.LimitBytes
}

// qdisc returns the effective queue discipline.
func (p Params) qdisc() Qdisc {
	if p.Qdisc == "" {
		return DropTail
	}
	return p.Qdisc
}

// TxTime is how long a packet of n bytes occupies the link.
func (p Params) TxTime(n int) time.Duration {
	if p.RateBps <= 0 {
		return 0
	}
	return time.Duration(math.Round(float64(n) * 8 / p.RateBps * 1e9))
}

// ValidateSchedule checks a schedule: sorted, non-negative times, valid
// parameters, and no change of queue discipline (a queue's state cannot be
// carried over to another discipline).
func ValidateSchedule(base Params, steps []Step) error {
	var last time.Duration
	for i, s := range steps {
		if s.At < 0 || (i > 0 && s.At < last) {
			return fmt.Errorf("schedule step %d at %v: times must be non-negative and increasing", i, s.At)
		}
		last = s.At
		if err := s.Params.Validate(); err != nil {
			return fmt.Errorf("schedule step %d at %v: %w", i, s.At, err)
		}
		if s.Params.qdisc() != base.qdisc() {
			return fmt.Errorf("schedule step %d at %v: queue discipline cannot change (%s → %s)", i, s.At, base.qdisc(), s.Params.qdisc())
		}
		if s.Params.HalfDuplex != base.HalfDuplex {
			return fmt.Errorf("schedule step %d at %v: duplex cannot change (the medium is built with the link)", i, s.At)
		}
	}
	return nil
}
