package client

import (
	"time"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// plotStep is the resolution of throughput series in the result.
const plotStep = 0.1

// assemble joins the client's and the server's view of one load phase.
// The receiver's byte counts give goodput; the sender's TCP_INFO gives the
// RFC 6349 figures: the server for download, the client for upload.
func (t *tester) assemble(pr *phaseResult, rep protocol.Report, baseline *model.RTTResult) *model.DirectionResult {
	d := &model.DirectionResult{Direction: pr.dir, StreamsMode: "fixed", Streams: len(pr.flows),
		DurationS: pr.end.Sub(pr.start).Seconds(), Flows: []model.Flow{}}
	if pr.auto {
		d.StreamsMode = "auto"
	}
	byTag := map[string]protocol.FlowReport{}
	for _, f := range rep.Flows {
		if f.Kind == pr.dir {
			byTag[f.Tag] = f
		}
	}
	var all [][]model.ByteCount
	for i, lf := range pr.flows {
		srv := byTag[lf.spec.tag]
		f := model.Flow{ID: i, DSCP: max(lf.spec.mark, 0)}
		var counts []model.ByteCount
		if pr.dir == protocol.KindDownload {
			lf.mu.Lock()
			counts = append(counts, lf.counts...)
			lf.mu.Unlock()
			f.Sender, f.TCPInfo, f.SndBufBytes = "server", srv.TCPInfo, srv.SndBufBytes
			_, f.RcvBufBytes, _ = tcpinfo.Buffers(lf.conn.Conn)
		} else {
			counts = srv.Counts
			f.Sender, f.TCPInfo, f.RcvBufBytes = "client", lf.series, srv.RcvBufBytes
			f.SndBufBytes, _, _ = tcpinfo.Buffers(lf.conn.Conn)
		}
		if f.TCPInfo == nil {
			f.TCPInfo = []model.TCPSample{}
		}
		if len(counts) > 0 {
			f.StartS, f.EndS = counts[0].TS, counts[len(counts)-1].TS
			f.Bytes = counts[len(counts)-1].Bytes - counts[0].Bytes
			if span := f.EndS - f.StartS; span > 0 {
				f.GoodputBps = float64(f.Bytes) * 8 / span
			}
		} else {
			f.StartS, f.EndS = t.since(lf.start), t.since(lf.end)
		}
		f.Throughput = nonNil(metrics.Rates(metrics.Resample(counts, plotStep)))
		all = append(all, counts)
		d.Flows = append(d.Flows, f)
	}
	agg := metrics.SumCounts(all, countEvery.Seconds())
	if len(agg) > 0 {
		d.Bytes = agg[len(agg)-1].Bytes
		if span := agg[len(agg)-1].TS - agg[0].TS; span > 0 {
			d.GoodputBps = float64(d.Bytes) * 8 / span
		}
	}
	d.Throughput = nonNil(metrics.Rates(metrics.Resample(agg, plotStep)))
	d.Latency = t.loaded(pr)
	d.RPM = rpm(pr, baseline)
	baseMs := 0.0
	if baseline != nil {
		baseMs = baseline.RTTMs.Min
	}
	d.RFC6349 = metrics.BuildRFC6349(d, agg, baseMs, t.cfg.linkRate(pr.dir), wireOverhead(t.cfg.WireOverhead))
	return d
}

// loaded is the probe connection's RTT during the phase.
func (t *tester) loaded(pr *phaseResult) *model.RTTResult {
	if t.probe == nil {
		return nil
	}
	samples, lost := t.probe.between(t.since(pr.start), t.since(pr.end), 2*time.Second)
	r := &model.RTTResult{RTTMs: metrics.Summarize(rttsOf(samples)), Samples: samples, Lost: lost}
	if r.Samples == nil {
		r.Samples = []model.RTTSample{}
	}
	if smp, err := t.probe.tcpinfo(); err == nil {
		r.ClientMinRTTMs = float64(smp.MinRTTUs) / 1000
		r.ClientRTTMs = float64(smp.RTTUs) / 1000
	}
	return r
}

// rpm computes responsiveness from the phase's foreign and self probes.
func rpm(pr *phaseResult, baseline *model.RTTResult) *model.RPM {
	var tcp, tls, httpF, self []float64
	for _, f := range pr.foreign {
		tcp = append(tcp, ms(f.tcp))
		if f.tls > 0 {
			tls = append(tls, ms(f.tls))
		}
		httpF = append(httpF, ms(f.http))
	}
	for _, f := range pr.flows {
		f.mu.Lock()
		self = append(self, f.selfRTT...)
		f.mu.Unlock()
	}
	v, err := metrics.RPM(tcp, tls, httpF, self)
	if err != nil {
		return nil
	}
	r := &model.RPM{RPM: v, TCPMs: metrics.Summarize(tcp), HTTPMs: metrics.Summarize(httpF), SelfMs: metrics.Summarize(self)}
	if len(tls) > 0 {
		s := metrics.Summarize(tls)
		r.TLSMs = &s
	}
	if baseline != nil {
		r.IdleRPM = metrics.IdleRPM(rttsOf(baseline.Samples))
	}
	return r
}

// wireOverhead maps the configuration (negative: none) to bytes.
func wireOverhead(cfg int) int { return max(cfg, 0) }

func nonNil(r []model.RatePoint) []model.RatePoint {
	if r == nil {
		return []model.RatePoint{}
	}
	return r
}
