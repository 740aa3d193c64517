// Package udptest is the client side of sonde's UDP quality test (`sonde
// udp`): it opens reflector sessions over the server's control channel,
// runs one isochronous STAMP sender per flow (several at once for QoS
// classes), and turns what the senders recorded into per-direction delay,
// jitter, loss, reordering and marking results (model.UDPResult). It also
// offers probes that run beside a TCP load phase (StartProbes).
package udptest

import (
	"math"
	"slices"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/stamp"
)

// histBins is the histogram resolution of reported distributions.
const histBins = 40

// Input is what a flow's analysis needs.
type Input struct {
	Run *stamp.Run
	// Report is the reflector's account of the session; nil when it could
	// not be fetched (then forward and backward loss cannot be split).
	Report *stamp.SessionReport
	// Shared, when set, gives the exact offset (reflector − client, ns) of
	// clocks on the same host; otherwise the offset is estimated.
	Shared   bool
	SharedNs int64
	Timeout  float64 // s
	DSCP     int
	ECN      int
	// OffsetWindow is the offset estimation window (s); 0: 10 s.
	OffsetWindow float64
	// Voice adds the E-model estimate (voice profile).
	Voice bool
}

// probe is one probe with its times in seconds from the run's start.
type probe struct {
	seq            int
	got, late      bool
	fwdLate        bool
	t1, t2, t3, t4 float64
	refl           uint32
}

// offsetModel is the clock offset a flow's one-way delays used.
type offsetModel = metrics.Offset

// Analyze computes a flow's result from a finished run.
func Analyze(in Input) model.UDPFlow {
	f, _ := analyze(in)
	return f
}

func analyze(in Input) (model.UDPFlow, offsetModel) {
	run := in.Run
	f := model.UDPFlow{Sent: run.Sent, KernelTimestamps: run.KernelTS,
		ReflectorFormat: reflectorFormat(run), UnparsedReplies: unparsedReplies(run)}
	if run.Sent == 0 {
		return f, offsetModel{}
	}
	base := run.StartNs
	sec := func(ns int64) float64 { return float64(ns-base) / 1e9 }
	ps := make([]probe, run.Sent)
	var sched []float64
	var mprobes []metrics.Probe
	for i := range ps {
		s, r := run.Sends[i], run.Replies[i]
		p := probe{seq: i, t1: sec(s.T1)}
		if !s.Err {
			sched = append(sched, float64(s.T1-s.Deadline)/1e3)
		}
		if r.Got {
			p.got = true
			p.t2, p.t3, p.t4, p.refl = sec(r.T2), sec(r.T3), sec(r.T4), r.ReflSeq
			p.late = p.t4-p.t1 > in.Timeout
			mprobes = append(mprobes, metrics.Probe{T1: p.t1, T2: p.t2, T3: p.t3, T4: p.t4})
		}
		ps[i] = p
	}
	f.ScheduleErrorUs = metrics.Summarize(sched)

	// The clock offset: exact for a shared clock, else estimated.
	var off metrics.Offset
	if in.Shared {
		off = metrics.Offset{At: float64(in.SharedNs) / 1e9}
		f.Clock = model.ClockOffset{SharedClock: true, OffsetMs: off.At * 1e3,
			Note: "reflector on the same host: one-way delays measured on a shared clock"}
	} else {
		window := in.OffsetWindow
		if window <= 0 {
			window = 10
		}
		if o, ok := metrics.EstimateOffset(mprobes, window); ok {
			off = o
			f.Clock = o.Model()
			f.Clock.Note = "estimated from the lowest-RTT probes: one-way delays are estimates within ± the uncertainty"
		}
	}
	f.Clock.Steps = run.ClockSteps

	var rtts []float64
	for i := range ps {
		p := &ps[i]
		if !p.got {
			continue
		}
		if !p.late {
			f.Replies++
			rtts = append(rtts, 1e3*((p.t4-p.t1)-(p.t3-p.t2)))
		}
		p.fwdLate = off.Forward(metrics.Probe{T1: p.t1, T2: p.t2}) > in.Timeout
	}
	f.RTTMs = metrics.Summarize(rtts)
	f.RTTHistogram = metrics.Histogram(rtts, histBins)
	var fpdv, bpdv []float64
	f.Forward, fpdv = forward(ps, in, off)
	f.Backward, bpdv = backward(ps, in, off)
	f.Marks = marks(run, in)
	if in.Voice {
		voice(&f, in, fpdv, bpdv)
	}
	off.T0 += float64(run.StartNs) / 1e9 // back to Clock seconds, for raw records
	return f, off
}

// forward analyses client → reflector: the reflector's bitmap says which
// probes arrived; replies give their times, in the reflector's arrival order
// (its sequence numbers).
func forward(ps []probe, in Input, off metrics.Offset) (model.UDPDirectionStats, []float64) {
	d := model.UDPDirectionStats{Direction: "forward", Sent: len(ps), Known: in.Report != nil, OWDEstimated: !in.Shared}
	lost := make([]bool, len(ps))
	owd := make([]float64, len(ps))
	var arrived []probe
	for i, p := range ps {
		owd[i] = math.NaN()
		reached := p.got || (in.Report != nil && in.Report.Has(uint32(i)))
		switch {
		case !reached:
			lost[i] = true
		case p.got && p.fwdLate:
			lost[i] = true
			d.Late++
		default:
			d.Received++
		}
		if p.got && !p.fwdLate {
			owd[i] = off.Forward(metrics.Probe{T1: p.t1, T2: p.t2}) * 1e3
			arrived = append(arrived, p)
		}
	}
	if in.Report != nil {
		d.Duplicates = in.Report.Duplicates
	}
	slices.SortFunc(arrived, func(a, b probe) int { return cmpUint32(a.refl, b.refl) })
	var send, recv []float64
	var order []uint64
	for _, p := range arrived {
		send = append(send, p.t1*1e3)
		recv = append(recv, p.t2*1e3)
		order = append(order, uint64(p.seq))
	}
	pdv := fill(&d, lost, owd, send, recv, order)
	return d, pdv
}

// backward analyses reflector → client: the stream is the reflector's
// sequence numbers; the report says how many it sent.
func backward(ps []probe, in Input, off metrics.Offset) (model.UDPDirectionStats, []float64) {
	d := model.UDPDirectionStats{Direction: "backward", Known: in.Report != nil, OWDEstimated: !in.Shared}
	n := 0
	byRefl := map[uint32]probe{}
	for _, p := range ps {
		if p.got {
			byRefl[p.refl] = p
			n = max(n, int(p.refl)+1)
		}
	}
	if in.Report != nil {
		n = max(n, in.Report.Reflected)
	}
	d.Sent = n
	lost := make([]bool, n)
	owd := make([]float64, n)
	var arrived []probe
	for r := range n {
		owd[r] = math.NaN()
		p, ok := byRefl[uint32(r)]
		switch {
		case !ok:
			lost[r] = true
		case p.late && !p.fwdLate:
			lost[r] = true
			d.Late++
		case p.late:
			// Already late on the way out: counted in the forward direction.
			lost[r] = true
		default:
			d.Received++
			owd[r] = off.Backward(metrics.Probe{T1: p.t1, T3: p.t3, T4: p.t4}) * 1e3
			arrived = append(arrived, p)
		}
	}
	slices.SortStableFunc(arrived, func(a, b probe) int { return cmpFloat(a.t4, b.t4) })
	var send, recv []float64
	var order []uint64
	for _, p := range arrived {
		send = append(send, p.t3*1e3)
		recv = append(recv, p.t4*1e3)
		order = append(order, uint64(p.refl))
	}
	pdv := fill(&d, lost, owd, send, recv, order)
	return d, pdv
}

// fill computes the statistics common to both directions and returns the
// PDV sample.
func fill(d *model.UDPDirectionStats, lost []bool, owd, send, recv []float64, order []uint64) []float64 {
	d.Lost = 0
	for _, l := range lost {
		if l {
			d.Lost++
		}
	}
	if d.Sent > 0 {
		d.LossPct = 100 * float64(d.Lost) / float64(d.Sent)
	}
	var got []float64
	for _, x := range owd {
		if !math.IsNaN(x) {
			got = append(got, x)
		}
	}
	d.OWDMs = metrics.Summarize(got)
	d.OWDHistogram = metrics.Histogram(got, histBins)
	d.JitterMs = metrics.Jitter3550(send, recv)
	ipdv := metrics.IPDV(owd)
	d.IPDVMs = metrics.Summarize(ipdv)
	d.IPDVAbsMs = metrics.Summarize(metrics.Abs(ipdv))
	pdv := metrics.PDV(owd)
	d.PDVMs = metrics.Summarize(pdv)
	d.Reordering, _ = metrics.ReorderingOf(order)
	d.LossPattern = metrics.LossPatternOf(lost, 1)
	return pdv
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// marks compares the DS field sent with what each end received.
func marks(run *stamp.Run, in Input) *model.MarkCheck {
	m := &model.MarkCheck{SentDSCP: in.DSCP, SentECN: in.ECN}
	want := in.DSCP<<2 | in.ECN
	reflTOS, clientTOS := map[int]int{}, map[int]int{}
	for _, r := range run.Replies[:run.Sent] {
		if !r.Got {
			continue
		}
		if r.HasCoS {
			tos := int(r.CoS.DSCP2)<<2 | int(r.CoS.ECN)
			reflTOS[tos]++
			if tos != want {
				m.ForwardChanged++
			}
		}
		if r.TOS >= 0 {
			clientTOS[r.TOS]++
			if r.TOS != want {
				m.BackwardChanged++
			}
		}
	}
	if len(reflTOS) == 0 && in.Report != nil {
		for tos, n := range in.Report.TOS {
			reflTOS[tos] += n
			if tos != want {
				m.ForwardChanged += n
			}
		}
	}
	if tos, ok := mode(reflTOS); ok {
		dscp, ecn := tos>>2, tos&3
		m.AtReflectorDSCP, m.AtReflectorECN = &dscp, &ecn
		same := m.ForwardChanged == 0
		m.ForwardOK = &same
	}
	if tos, ok := mode(clientTOS); ok {
		dscp, ecn := tos>>2, tos&3
		m.AtClientDSCP, m.AtClientECN = &dscp, &ecn
		same := m.BackwardChanged == 0
		m.BackwardOK = &same
	}
	return m
}

// mode returns the most frequent key (the smallest on ties).
func mode(m map[int]int) (int, bool) {
	best, n := 0, 0
	for k, c := range m {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best, n > 0
}

// voice adds the E-model estimate of a G.711 call to f, for the worse
// direction: mouth-to-ear delay = its median one-way delay + 20 ms
// packetisation + a fixed 40 ms jitter buffer; packets whose PDV exceeds
// the buffer count as lost, on top of the direction's losses.
func voice(f *model.UDPFlow, in Input, fpdv, bpdv []float64) {
	const packetisation, buffer = 20.0, 40.0
	worst, pdv := f.Forward, fpdv
	if f.Backward.OWDMs.P50+f.Backward.LossPct > worst.OWDMs.P50+worst.LossPct {
		worst, pdv = f.Backward, bpdv
	}
	late := 0
	for _, x := range pdv {
		if x > buffer {
			late++
		}
	}
	loss := worst.LossPct
	if worst.Sent > 0 {
		loss += 100 * float64(late) / float64(worst.Sent)
	}
	assumption := "G.711, 20 ms frames, fixed 40 ms jitter buffer; delay = worse direction's median one-way delay + 60 ms; loss includes packets beyond the buffer"
	if !in.Shared {
		assumption += "; one-way delay estimated (clock offset uncertainty applies)"
	}
	v := metrics.VoiceG711(worst.OWDMs.P50+packetisation+buffer, loss, assumption)
	f.Voice = &v
}

// reflectorFormat names the format the reflector's replies were read in.
func reflectorFormat(run *stamp.Run) string {
	st, tw, either := run.Formats[stamp.FormatSTAMP], run.Formats[stamp.FormatTWAMPLight], run.Formats[stamp.FormatEither]
	switch {
	case st > 0 && tw > 0:
		return "mixed"
	case st > 0:
		return stamp.FormatSTAMP.String()
	case tw > 0:
		return stamp.FormatTWAMPLight.String()
	case either > 0:
		return stamp.FormatEither.String()
	}
	return ""
}

// unparsedReplies copies the run's tally of unreadable datagrams.
func unparsedReplies(run *stamp.Run) []model.UnparsedReplies {
	var out []model.UnparsedReplies
	for _, k := range run.Unparsed.Kinds {
		out = append(out, model.UnparsedReplies{Bytes: k.Bytes, Count: k.Count, Reason: k.Reason})
	}
	if run.Unparsed.Other > 0 {
		out = append(out, model.UnparsedReplies{Count: run.Unparsed.Other, Reason: "other sizes"})
	}
	return out
}
