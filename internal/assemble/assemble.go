// Package assemble builds the measured parts of a result from both ends'
// records of a test: a load phase's direction result (goodput from the
// receiver's byte counts, the sender's TCP_INFO, latency under load,
// responsiveness, RFC 6349) and the server's view of the idle probe stream.
//
// It is the one place where `sonde test` (internal/tcptest) and the browser
// page's result endpoint (internal/server) join their inputs, so the two
// cannot drift apart: each only converts what it recorded into a Phase.
// The formulas themselves are internal/metrics'.
package assemble

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

const (
	// SumStep is the grid, in seconds, on which the flows' cumulative
	// counts are summed into the direction's: the receivers' count
	// interval (every receiver, the client's, the server's and the
	// page's, counts every 50 ms). Values between counts are linear
	// interpolations, so a finer grid would add no information.
	SumStep = 0.05
	// PlotStep is the resolution, in seconds, of the throughput series.
	PlotStep = 0.1
)

// Flow is what was recorded of one load stream. Times are seconds on the
// result's clock (the client's time zero): a caller shifts server times
// before it fills a Flow.
type Flow struct {
	// DSCP is the stream's mark (0 for none).
	DSCP int
	// Counts are the receiver's cumulative payload counts, in time order.
	Counts []model.ByteCount
	// TCPInfo is the sender's TCP_INFO series (nil if it could not be
	// read, as for a browser's upload).
	TCPInfo []model.TCPSample
	// SndBufBytes and RcvBufBytes are the sender's SO_SNDBUF and the
	// receiver's SO_RCVBUF (0: unknown).
	SndBufBytes, RcvBufBytes int
	// StartS and EndS are the stream's life, used only when it has no
	// counts.
	StartS, EndS float64
}

// Foreign are a phase's responsiveness probes on new connections, in ms:
// one entry per probe in each list, TLS only where a handshake was timed.
type Foreign struct {
	TCPMs, TLSMs, HTTPMs []float64
}

// Phase is everything one load phase recorded.
type Phase struct {
	// Direction is protocol.KindDownload or protocol.KindUpload.
	Direction string
	// Auto says the number of streams was chosen by --streams auto.
	Auto bool
	// StartS and EndS bound the phase.
	StartS, EndS float64
	// Flows are the phase's streams in the order they were opened.
	Flows []Flow
	// Latency is the probe stream's RTTs during the phase (RTT builds
	// it); nil without probes.
	Latency *model.RTTResult
	// SelfMs are probe RTTs on the loaded streams themselves.
	SelfMs  []float64
	Foreign Foreign
	// Baseline is the idle RTT of the test: its minimum is RFC 6349's
	// baseline RTT and its samples give the idle RPM. nil: none.
	Baseline *model.RTTResult
	// BaselineMinRTTMs is RFC 6349's baseline RTT when there is no
	// Baseline (the server's records: its probe stream's TCP min_rtt).
	BaselineMinRTTMs float64
	// LinkRateBps and WireOverhead describe the bottleneck link for RFC
	// 6349's maximum goodput and TTR (0: unknown; negative overhead: 0).
	LinkRateBps  float64
	WireOverhead int
}

// Direction joins a phase's records into its result. The receiver's counts
// give the goodput of every flow and, summed, of the direction; the
// sender's TCP_INFO gives the RFC 6349 figures over the steady-state
// window (metrics.BuildRFC6349, which also finishes every flow).
func Direction(p Phase) *model.DirectionResult {
	d := &model.DirectionResult{Direction: p.Direction, StreamsMode: "fixed", Streams: len(p.Flows),
		DurationS: p.EndS - p.StartS, Flows: make([]model.Flow, 0, len(p.Flows))}
	if p.Auto {
		d.StreamsMode = "auto"
	}
	sender := "client"
	if p.Direction == protocol.KindDownload {
		sender = "server"
	}
	all := make([][]model.ByteCount, 0, len(p.Flows))
	for i, in := range p.Flows {
		f := model.Flow{ID: i, DSCP: max(in.DSCP, 0), Sender: sender, TCPInfo: in.TCPInfo,
			SndBufBytes: in.SndBufBytes, RcvBufBytes: in.RcvBufBytes}
		if f.TCPInfo == nil {
			f.TCPInfo = []model.TCPSample{}
		}
		if c := in.Counts; len(c) > 0 {
			f.StartS, f.EndS = c[0].TS, c[len(c)-1].TS
			f.Bytes, f.GoodputBps = goodput(c)
		} else {
			f.StartS, f.EndS = in.StartS, in.EndS
		}
		f.Throughput = metrics.Rates(metrics.Resample(in.Counts, PlotStep))
		all = append(all, in.Counts)
		d.Flows = append(d.Flows, f)
	}
	agg := metrics.SumCounts(all, SumStep)
	d.Bytes, d.GoodputBps = goodput(agg)
	d.Throughput = metrics.Rates(metrics.Resample(agg, PlotStep))
	d.Latency = p.Latency
	d.RPM = RPM(p.Foreign, p.SelfMs, p.Baseline)
	baseMs := max(p.BaselineMinRTTMs, 0)
	if p.Baseline != nil && p.Baseline.RTTMs.N > 0 {
		baseMs = p.Baseline.RTTMs.Min
	}
	d.RFC6349 = metrics.BuildRFC6349(d, agg, baseMs, p.LinkRateBps, max(p.WireOverhead, 0))
	return d
}

// goodput is the payload a cumulative series counted over its own span and
// its rate: last count minus first over last time minus first. Bytes
// counted before the first count are not in the span, so they are not in
// the figure either (0, 0 for fewer than two counts or no span).
func goodput(c []model.ByteCount) (bytes int64, bps float64) {
	if len(c) == 0 {
		return 0, 0
	}
	first, last := c[0], c[len(c)-1]
	bytes = last.Bytes - first.Bytes
	if span := last.TS - first.TS; span > 0 {
		bps = float64(bytes) * 8 / span
	}
	return bytes, bps
}

// RTT summarises probe RTTs: lost counts probes that got no reply.
func RTT(samples []model.RTTSample, lost int) *model.RTTResult {
	if samples == nil {
		samples = []model.RTTSample{}
	}
	return &model.RTTResult{RTTMs: metrics.Summarize(RTTsMs(samples)), Samples: samples, Lost: lost}
}

// RTTsMs are the samples' RTTs in ms.
func RTTsMs(s []model.RTTSample) []float64 {
	out := make([]float64, len(s))
	for i, x := range s {
		out[i] = x.RTTMs
	}
	return out
}

// RPM is a phase's responsiveness (metrics.md §5) with the raw
// distributions behind it. RPM itself needs foreign TCP and HTTP probes and
// self probes (metrics.RPM); without them it stays 0 (shown as n/a) rather
// than a figure of another definition, and the distributions that were
// measured are still reported. nil when the phase had no probes at all.
func RPM(f Foreign, selfMs []float64, baseline *model.RTTResult) *model.RPM {
	if len(selfMs) == 0 && len(f.TCPMs) == 0 && len(f.TLSMs) == 0 && len(f.HTTPMs) == 0 {
		return nil
	}
	r := &model.RPM{TCPMs: metrics.Summarize(f.TCPMs), HTTPMs: metrics.Summarize(f.HTTPMs), SelfMs: metrics.Summarize(selfMs)}
	if len(f.TLSMs) > 0 {
		s := metrics.Summarize(f.TLSMs)
		r.TLSMs = &s
	}
	if v, err := metrics.RPM(f.TCPMs, f.TLSMs, f.HTTPMs, selfMs); err == nil {
		r.RPM = v
	}
	if baseline != nil {
		r.IdleRPM = metrics.IdleRPM(RTTsMs(baseline.Samples))
	}
	return r
}

// ServerBaseline adds the server's TCP_INFO view of the idle probe stream
// to the baseline: the RTT of its first sample (taken when the stream
// opened, before any load) and the lowest min_rtt (the last sample's, as
// min_rtt only falls). The first probe stream is the baseline's; a later
// one (a page reconnecting) ran under load. reps are the session's flow
// reports.
func ServerBaseline(b *model.RTTResult, reps []protocol.FlowReport) {
	if b == nil {
		return
	}
	for _, f := range reps {
		if f.Kind == protocol.KindProbe && len(f.TCPInfo) > 0 {
			first, last := f.TCPInfo[0], f.TCPInfo[len(f.TCPInfo)-1]
			b.ServerMinRTTMs = float64(last.MinRTTUs) / 1000
			b.ServerRTTMs = float64(first.RTTUs) / 1000
			return
		}
	}
}

// ForeignNote says how many of a phase's foreign probes could not be
// timed, when any; answered is how many were.
func ForeignNote(direction string, failed, answered int) string {
	if failed <= 0 {
		return ""
	}
	return fmt.Sprintf("%s: %d of %d foreign probes got no answer or no new connection to time; RPM stands on the other %d",
		direction, failed, failed+answered, answered)
}

// Bidir joins the bidirectional phase: its download and upload, each a
// Phase of its own streams, both carrying the phase's probe RTTs as their
// Latency. The phase keeps one latency (the download's, else the
// upload's); the directions' copies are dropped.
func Bidir(down, up *Phase) *model.BidirResult {
	b := &model.BidirResult{}
	for _, p := range []*Phase{down, up} {
		if p == nil {
			continue
		}
		d := Direction(*p)
		if b.Latency == nil {
			b.Latency = d.Latency
		}
		d.Latency = nil
		if b.Download == nil && b.Upload == nil {
			b.StartS, b.DurationS = p.StartS, p.EndS-p.StartS
		} else {
			start := min(b.StartS, p.StartS)
			b.DurationS = max(b.StartS+b.DurationS, p.EndS) - start
			b.StartS = start
		}
		if p.Direction == protocol.KindDownload {
			b.Download = d
		} else {
			b.Upload = d
		}
	}
	if b.Download == nil && b.Upload == nil {
		return nil
	}
	return b
}
