package assemble

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// The server's own records of a test (model.ServerRecord): the same joins
// as the client's, fed with what the server alone saw. A download's
// receiver is the client, whose counts the server has not got; the
// server's TCP_INFO bytes_acked is what that receiver's TCP acknowledged,
// so it stands in for the receive count (stream framing included, a few
// bytes per 64 KiB frame). An upload's receiver is the server: its counts
// are the payload it received, and the sender's TCP_INFO is the client's,
// so the upload has no sender figures.

// MaxRecordTCPSamples bounds the TCP_INFO samples a server record keeps
// of one direction, all its flows together (at least 16 per flow), so a
// record of many streams sampled every 5 ms for minutes stays well within
// the store's row cap: about 600 bytes of JSON each. The figures are
// computed from every sample first.
const MaxRecordTCPSamples = 4096

// thinTCPInfo keeps at most MaxRecordTCPSamples of d's flows' TCP_INFO,
// evenly spaced, the first and last of each flow always; it returns a
// note saying so when it dropped any.
func thinTCPInfo(d *model.DirectionResult) string {
	if d == nil || len(d.Flows) == 0 {
		return ""
	}
	per := max(MaxRecordTCPSamples/len(d.Flows), 16)
	thinned := false
	for i := range d.Flows {
		in := d.Flows[i].TCPInfo
		if len(in) <= per {
			continue
		}
		out := make([]model.TCPSample, 0, per)
		for k := range per {
			out = append(out, in[k*(len(in)-1)/(per-1)])
		}
		d.Flows[i].TCPInfo, thinned = out, true
	}
	if !thinned {
		return ""
	}
	return fmt.Sprintf("%s: the record keeps %d TCP_INFO samples per flow, evenly spaced; its figures are from all of them", d.Direction, per)
}

// AckedCounts turns a sender's TCP_INFO series into a cumulative count of
// the bytes its peer acknowledged, at the samples' times.
func AckedCounts(tcp []model.TCPSample) []model.ByteCount {
	out := make([]model.ByteCount, 0, len(tcp))
	for _, s := range tcp {
		b := int64(min(s.BytesAcked, 1<<62))
		if n := len(out); n > 0 && (s.TS < out[n-1].TS || b < out[n-1].Bytes) {
			continue // out of order: a count never goes back
		}
		out = append(out, model.ByteCount{TS: s.TS, Bytes: b})
	}
	return out
}

// ServerSession builds the measured parts of a sonde test session's
// record from the server's flow reports: its download streams (sender
// TCP_INFO), its upload streams (receive counts) and its probe streams.
// Each direction joins all the session's streams of that direction.
func ServerSession(reps []protocol.FlowReport) *model.ServerRecord {
	rec := &model.ServerRecord{Schema: model.ServerRecordSchemaVersion, Kind: model.KindTCP}
	var probe []protocol.FlowReport
	byDir := map[string][]protocol.FlowReport{}
	for _, f := range reps {
		// A limit that ended a stream is the test's failure; any other
		// stream error is only a note: a client ends a phase by closing
		// its streams, which the server reads as a reset or a cut frame.
		switch msg := fmt.Sprintf("%s stream %d %q: %s", f.Kind, f.ID, f.Tag, f.Error); {
		case f.Limit != "":
			rec.Errors = append(rec.Errors, msg)
		case f.Error != "":
			rec.Notes = append(rec.Notes, msg)
		}
		switch f.Kind {
		case protocol.KindProbe:
			probe = append(probe, f)
		case protocol.KindDownload, protocol.KindUpload:
			key := f.Kind
			if strings.HasPrefix(f.Tag, protocol.TagBidir) {
				key = protocol.TagBidir + f.Kind
			}
			byDir[key] = append(byDir[key], f)
		}
	}
	rec.Probe = serverProbe(probe)
	if rec.Probe != nil {
		rec.IdleRTTMs = rec.Probe.MinRTTMs
	} else {
		// No probe stream (an HTTP load test): the load connections' own
		// TCP min_rtt, as an ndt7 record takes it.
		for _, r := range byDir[protocol.KindDownload] {
			rec.IdleRTTMs = minRTTMs(rec.IdleRTTMs, r.TCPInfo)
		}
	}
	if fs := byDir[protocol.KindDownload]; len(fs) > 0 {
		rec.Download = serverDirection(protocol.KindDownload, fs, rec.IdleRTTMs)
		rec.LoadedRTTMs = medianRTTMs(rec.Download)
	}
	if fs := byDir[protocol.KindUpload]; len(fs) > 0 {
		rec.Upload = serverDirection(protocol.KindUpload, fs, rec.IdleRTTMs)
	}
	var bidir [2]*model.DirectionResult
	for i, k := range []string{protocol.KindDownload, protocol.KindUpload} {
		if fs := byDir[protocol.TagBidir+k]; len(fs) > 0 {
			bidir[i] = serverDirection(k, fs, rec.IdleRTTMs)
		}
	}
	if bidir[0] != nil || bidir[1] != nil {
		rec.Bidir = &model.BidirResult{Download: bidir[0], Upload: bidir[1]}
		fs := append(byDir[protocol.TagBidir+protocol.KindDownload], byDir[protocol.TagBidir+protocol.KindUpload]...)
		start, end := fs[0].StartS, fs[0].EndS
		for _, f := range fs {
			start, end = min(start, f.StartS), max(end, f.EndS)
		}
		rec.Bidir.StartS, rec.Bidir.DurationS = start, end-start
	}
	for _, d := range []*model.DirectionResult{rec.Download, rec.Upload, bidir[0], bidir[1]} {
		if n := thinTCPInfo(d); n != "" {
			rec.Notes = append(rec.Notes, n)
		}
	}
	return rec
}

// serverDirection joins one direction's server-side flows.
func serverDirection(dir string, reps []protocol.FlowReport, idleMs float64) *model.DirectionResult {
	p := Phase{Direction: dir, StartS: reps[0].StartS, EndS: reps[0].EndS, BaselineMinRTTMs: idleMs}
	for _, r := range reps {
		p.StartS, p.EndS = min(p.StartS, r.StartS), max(p.EndS, r.EndS)
		f := Flow{DSCP: r.DSCP, StartS: r.StartS, EndS: r.EndS}
		if dir == protocol.KindDownload {
			f.Counts, f.TCPInfo, f.SndBufBytes = AckedCounts(r.TCPInfo), r.TCPInfo, r.SndBufBytes
		} else {
			f.Counts, f.RcvBufBytes = r.Counts, r.RcvBufBytes
		}
		p.Flows = append(p.Flows, f)
	}
	return Direction(p)
}

// serverProbe summarises the server's TCP_INFO of the probe streams; nil
// without any.
func serverProbe(reps []protocol.FlowReport) *model.ServerProbe {
	if len(reps) == 0 {
		return nil
	}
	p := &model.ServerProbe{Streams: len(reps)}
	var rtt []float64
	for _, r := range reps {
		for _, s := range r.TCPInfo {
			if s.RTTUs > 0 {
				rtt = append(rtt, float64(s.RTTUs)/1000)
			}
			if m := float64(s.MinRTTUs) / 1000; s.MinRTTUs > 0 && (p.MinRTTMs == 0 || m < p.MinRTTMs) {
				p.MinRTTMs = m
			}
		}
	}
	p.RTTMs = metrics.Summarize(rtt)
	return p
}

// minRTTMs is the least of least (0: none) and series' TCP min_rtt.
func minRTTMs(least float64, series []model.TCPSample) float64 {
	for _, s := range series {
		if m := float64(s.MinRTTUs) / 1000; s.MinRTTUs > 0 && (least == 0 || m < least) {
			least = m
		}
	}
	return least
}

// medianRTTMs is the median TCP_INFO RTT of a direction's flows (0: none).
func medianRTTMs(d *model.DirectionResult) float64 {
	var rtt []float64
	for _, f := range d.Flows {
		for _, s := range f.TCPInfo {
			if s.RTTUs > 0 {
				rtt = append(rtt, float64(s.RTTUs)/1000)
			}
		}
	}
	return metrics.Summarize(rtt).P50
}

// ServerNDT7 builds the measured parts of an ndt7 test's record from the
// server's measurements: counts are the application bytes it sent
// (download) or received (upload), tcp its socket's TCP_INFO, both at the
// measurements' times (seconds since the test began).
func ServerNDT7(dir string, counts []model.ByteCount, tcp []model.TCPSample) *model.ServerRecord {
	rec := &model.ServerRecord{Schema: model.ServerRecordSchemaVersion, Kind: model.KindNDT7}
	rec.IdleRTTMs = minRTTMs(0, tcp)
	f := Flow{}
	if len(counts) > 0 {
		f.StartS, f.EndS = counts[0].TS, counts[len(counts)-1].TS
	}
	p := Phase{Direction: dir, StartS: f.StartS, EndS: f.EndS, BaselineMinRTTMs: rec.IdleRTTMs}
	if dir == protocol.KindDownload {
		f.Counts, f.TCPInfo = AckedCounts(tcp), tcp
		p.Flows = []Flow{f}
		rec.Download = Direction(p)
		rec.LoadedRTTMs = medianRTTMs(rec.Download)
		if n := thinTCPInfo(rec.Download); n != "" {
			rec.Notes = append(rec.Notes, n)
		}
	} else {
		f.Counts = counts
		p.Flows = []Flow{f}
		rec.Upload = Direction(p)
	}
	return rec
}

// ServerUDP is what the reflector's report says of a STAMP session: its
// counts, the forward loss below the highest sequence number received,
// and the DS field values seen.
func ServerUDP(rep stamp.SessionReport) *model.ServerUDP {
	u := &model.ServerUDP{Received: rep.Received, Reflected: rep.Reflected, Duplicates: rep.Duplicates,
		RateLimited: rep.RateLimited, Late: rep.Late, SendErrors: rep.SendErrors, HighestSeq: -1}
	var got int64
	for i := len(rep.Bitmap) - 1; i >= 0; i-- {
		if b := rep.Bitmap[i]; b != 0 && u.HighestSeq < 0 {
			u.HighestSeq = int64(i)*8 + int64(7-bits.LeadingZeros8(b))
		}
		got += int64(bits.OnesCount8(rep.Bitmap[i]))
	}
	u.Missing = u.HighestSeq + 1 - got
	for tos, n := range rep.TOS {
		u.TOS = append(u.TOS, model.TOSCount{DSCP: tos >> 2, ECN: tos & 3, Count: n})
	}
	sort.Slice(u.TOS, func(i, j int) bool {
		a, b := u.TOS[i], u.TOS[j]
		return a.DSCP < b.DSCP || a.DSCP == b.DSCP && a.ECN < b.ECN
	})
	return u
}
