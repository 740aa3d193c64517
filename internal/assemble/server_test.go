package assemble

import (
	"math"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stamp"
)

// tcpSeries is a sender's TCP_INFO: bytes acked growing at rate bit/s
// from t0 for n samples every 50 ms, RTT 20 ms, min_rtt 10 ms.
func tcpSeries(t0 float64, n int, bps float64) []model.TCPSample {
	out := make([]model.TCPSample, n)
	for i := range out {
		ts := t0 + 0.05*float64(i)
		acked := uint64(bps / 8 * (ts - t0))
		out[i] = model.TCPSample{TS: ts, RTTUs: 20000, MinRTTUs: 10000, SndMSS: 1448, SndCwnd: 100,
			BytesAcked: acked, BytesSent: acked + 1000, BusyTimeUs: uint64((ts - t0) * 1e6)}
	}
	return out
}

func TestAckedCounts(t *testing.T) {
	in := []model.TCPSample{{TS: 0, BytesAcked: 10}, {TS: 1, BytesAcked: 50}, {TS: 0.5, BytesAcked: 60}, {TS: 2, BytesAcked: 40}, {TS: 3, BytesAcked: 90}}
	got := AckedCounts(in)
	want := []model.ByteCount{{TS: 0, Bytes: 10}, {TS: 1, Bytes: 50}, {TS: 3, Bytes: 90}}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
}

// TestServerSession: known series give known figures: two download flows
// at 80 and 40 Mbit/s acked for 2 s, one upload flow counting 10 MB in
// 1 s, a probe stream with min_rtt 10 ms; a stream cut by a limit is the
// record's error, a client's abrupt close only a note.
func TestServerSession(t *testing.T) {
	reps := []protocol.FlowReport{
		{ID: 0, Kind: protocol.KindProbe, TCPInfo: tcpSeries(0, 10, 0)},
		{ID: 1, Kind: protocol.KindDownload, Tag: "d0", StartS: 1, EndS: 3, TCPInfo: tcpSeries(1, 41, 80e6), Error: "connection reset by peer"},
		{ID: 2, Kind: protocol.KindDownload, Tag: "d1", StartS: 1, EndS: 3, TCPInfo: tcpSeries(1, 41, 40e6)},
		{ID: 3, Kind: protocol.KindUpload, Tag: "u0", StartS: 4, EndS: 5, Counts: []model.ByteCount{{TS: 4, Bytes: 0}, {TS: 4.5, Bytes: 5e6}, {TS: 5, Bytes: 10e6}},
			Limit: protocol.LimitBytes, Error: "test byte limit reached"},
	}
	rec := ServerSession(reps)
	if rec.Kind != model.KindTCP || rec.Schema != model.ServerRecordSchemaVersion {
		t.Fatalf("kind %q schema %q", rec.Kind, rec.Schema)
	}
	if d := rec.Download; d == nil || len(d.Flows) != 2 || math.Abs(d.GoodputBps-120e6) > 1e6 || d.Flows[0].Sender != "server" {
		t.Errorf("download %+v", d)
	}
	if u := rec.Upload; u == nil || u.Bytes != 10e6 || math.Abs(u.GoodputBps-80e6) > 1 || u.Flows[0].Sender != "client" {
		t.Errorf("upload %+v", u)
	}
	if rec.IdleRTTMs != 10 || rec.LoadedRTTMs != 20 || rec.Probe == nil || rec.Probe.Streams != 1 || rec.Probe.RTTMs.P50 != 20 {
		t.Errorf("idle %v loaded %v probe %+v", rec.IdleRTTMs, rec.LoadedRTTMs, rec.Probe)
	}
	if len(rec.Errors) != 1 || len(rec.Notes) != 1 {
		t.Errorf("errors %q notes %q", rec.Errors, rec.Notes)
	}
	if r := rec.Download.RFC6349; r == nil || r.BaselineRTTMs != 10 {
		t.Errorf("RFC 6349 %+v", r)
	}
}

func TestServerNDT7(t *testing.T) {
	down := ServerNDT7(protocol.KindDownload, nil, tcpSeries(0, 21, 100e6))
	if d := down.Download; d == nil || math.Abs(d.GoodputBps-100e6) > 1e6 || down.IdleRTTMs != 10 || down.Upload != nil {
		t.Errorf("ndt7 download %+v", down)
	}
	up := ServerNDT7(protocol.KindUpload, []model.ByteCount{{TS: 0, Bytes: 0}, {TS: 2, Bytes: 5e6}}, nil)
	if u := up.Upload; u == nil || u.Bytes != 5e6 || u.GoodputBps != 20e6 || up.Download != nil {
		t.Errorf("ndt7 upload %+v", up)
	}
}

func TestServerUDP(t *testing.T) {
	// Probes 0–9 and 17 arrived, 10–16 did not; 18 on are unknown.
	rep := stamp.SessionReport{Received: 11, Reflected: 11, Bitmap: []byte{0xff, 0x03, 0x02, 0}, TOS: map[int]int{46<<2 | 1: 3, 0: 8}}
	u := ServerUDP(rep)
	if u.HighestSeq != 17 || u.Missing != 7 || u.Received != 11 {
		t.Errorf("highest %d missing %d received %d", u.HighestSeq, u.Missing, u.Received)
	}
	if len(u.TOS) != 2 || u.TOS[0] != (model.TOSCount{DSCP: 0, ECN: 0, Count: 8}) || u.TOS[1] != (model.TOSCount{DSCP: 46, ECN: 1, Count: 3}) {
		t.Errorf("TOS %+v", u.TOS)
	}
	if e := ServerUDP(stamp.SessionReport{Bitmap: make([]byte, 4)}); e.HighestSeq != -1 || e.Missing != 0 {
		t.Errorf("nothing received: %+v", e)
	}
}

// TestServerSessionThinned: 64 flows of 2 minutes sampled every 5 ms
// keep MaxRecordTCPSamples in all, first and last of each, with a note;
// the goodput is from every sample.
func TestServerSessionThinned(t *testing.T) {
	var reps []protocol.FlowReport
	for i := range 64 {
		tcp := tcpSeries(0, 401, 8e6)
		for k := range tcp {
			tcp[k].TS = 0.005 * float64(k)
			tcp[k].BytesAcked = uint64(k) * 5000
		}
		reps = append(reps, protocol.FlowReport{ID: i, Kind: protocol.KindDownload, StartS: 0, EndS: 2, TCPInfo: tcp})
	}
	rec := ServerSession(reps)
	total := 0
	for _, f := range rec.Download.Flows {
		total += len(f.TCPInfo)
		if f.TCPInfo[0].TS != 0 || f.TCPInfo[len(f.TCPInfo)-1].TS != 2 {
			t.Fatalf("first or last sample dropped: %v … %v", f.TCPInfo[0].TS, f.TCPInfo[len(f.TCPInfo)-1].TS)
		}
	}
	if total > MaxRecordTCPSamples || len(rec.Notes) != 1 {
		t.Errorf("%d samples kept, notes %q", total, rec.Notes)
	}
	if b := rec.Download.Bytes; b != 64*400*5000 {
		t.Errorf("bytes %d, want %d from every sample", b, 64*400*5000)
	}
}

// TestServerSessionBidir: the streams of a bidirectional phase (tags
// "bidir-…") are the record's bidir, not part of its one-way download.
func TestServerSessionBidir(t *testing.T) {
	reps := []protocol.FlowReport{
		{ID: 1, Kind: protocol.KindDownload, Tag: "d0", StartS: 1, EndS: 3, TCPInfo: tcpSeries(1, 41, 80e6)},
		{ID: 2, Kind: protocol.KindDownload, Tag: "bidir-download-0", StartS: 10, EndS: 12, TCPInfo: tcpSeries(10, 41, 30e6)},
		{ID: 3, Kind: protocol.KindUpload, Tag: "bidir-upload-0", StartS: 10, EndS: 11.5, Counts: []model.ByteCount{{TS: 10, Bytes: 0}, {TS: 11, Bytes: 5e6}}},
	}
	rec := ServerSession(reps)
	if d := rec.Download; d == nil || len(d.Flows) != 1 || math.Abs(d.GoodputBps-80e6) > 1e6 {
		t.Errorf("download %+v", d)
	}
	b := rec.Bidir
	if b == nil || b.Download == nil || b.Upload == nil || rec.Upload != nil {
		t.Fatalf("bidir %+v upload %+v", b, rec.Upload)
	}
	if math.Abs(b.Download.GoodputBps-30e6) > 1e6 || math.Abs(b.Upload.GoodputBps-40e6) > 1 || b.StartS != 10 || b.DurationS != 2 {
		t.Errorf("bidir down %v up %v start %v duration %v", b.Download.GoodputBps, b.Upload.GoodputBps, b.StartS, b.DurationS)
	}
}
