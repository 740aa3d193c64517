package tcptest

import (
	"time"

	"github.com/sonde-project/sonde/internal/assemble"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// assemble joins the client's and the server's view of one load phase
// (internal/assemble, the same code as the browser page's result).
func (t *tester) assemble(pr *phaseResult, rep protocol.Report, baseline *model.RTTResult) *model.DirectionResult {
	return assemble.Direction(t.phase(pr, rep, baseline))
}

// phase gathers what the client recorded of a phase and what the server
// reported of it: the receiver's counts are the client's for download and
// the server's for upload, the sender's TCP_INFO the other way round.
// rep's times are already on the client's clock (tester.report).
func (t *tester) phase(pr *phaseResult, rep protocol.Report, baseline *model.RTTResult) assemble.Phase {
	p := assemble.Phase{Direction: pr.dir, Auto: pr.auto, StartS: t.since(pr.start), EndS: t.since(pr.end),
		Flows: make([]assemble.Flow, 0, len(pr.flows)), Latency: t.loaded(pr), Baseline: baseline,
		LinkRateBps: t.cfg.linkRate(pr.dir), WireOverhead: t.cfg.WireOverhead}
	byTag := map[string]protocol.FlowReport{}
	for _, f := range rep.Flows {
		if f.Kind == pr.dir {
			byTag[f.Tag] = f
		}
	}
	for _, lf := range pr.flows {
		srv := byTag[lf.spec.tag]
		f := assemble.Flow{DSCP: lf.spec.mark, StartS: t.since(lf.start), EndS: t.since(lf.end)}
		var snd, rcv int
		if lf.conn != nil {
			snd, rcv, _ = tcpinfo.Buffers(lf.conn.Conn)
		}
		lf.mu.Lock()
		if pr.dir == protocol.KindDownload {
			f.Counts = append([]model.ByteCount(nil), lf.counts...)
			f.TCPInfo, f.SndBufBytes, f.RcvBufBytes = srv.TCPInfo, srv.SndBufBytes, rcv
		} else {
			f.Counts = srv.Counts
			f.TCPInfo, f.SndBufBytes, f.RcvBufBytes = lf.series, snd, srv.RcvBufBytes
		}
		p.SelfMs = append(p.SelfMs, lf.selfRTT...)
		lf.mu.Unlock()
		p.Flows = append(p.Flows, f)
	}
	for _, f := range pr.foreign {
		p.Foreign.TCPMs = append(p.Foreign.TCPMs, ms(f.tcp))
		if f.tls > 0 {
			p.Foreign.TLSMs = append(p.Foreign.TLSMs, ms(f.tls))
		}
		p.Foreign.HTTPMs = append(p.Foreign.HTTPMs, ms(f.http))
	}
	return p
}

// loaded is the probe connection's RTT during the phase.
func (t *tester) loaded(pr *phaseResult) *model.RTTResult {
	if t.probe == nil {
		return nil
	}
	r := assemble.RTT(t.probe.between(t.since(pr.start), t.since(pr.end), 2*time.Second))
	if smp, err := t.probe.tcpinfo(); err == nil {
		r.ClientMinRTTMs = float64(smp.MinRTTUs) / 1000
		r.ClientRTTMs = float64(smp.RTTUs) / 1000
	}
	return r
}
