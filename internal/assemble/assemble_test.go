package assemble

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/protocol"
)

// counts is a cumulative series at rate bit/s every 50 ms from t0 to t1,
// starting at first bytes (a receiver's first count may already hold what
// arrived before it).
func counts(t0, t1, rate float64, first int64) []model.ByteCount {
	var c []model.ByteCount
	for i := 0; ; i++ {
		ts := t0 + float64(i)*0.05
		if ts > t1+1e-9 {
			return c
		}
		c = append(c, model.ByteCount{TS: ts, Bytes: first + int64(math.Round((ts-t0)*rate/8))})
	}
}

// Goodput is bytes over the counts' span: bytes before a flow's first
// count are outside it and left out, for every flow and for the sum.
func TestDirectionGoodput(t *testing.T) {
	p := Phase{Direction: protocol.KindDownload, StartS: 1, EndS: 3, Flows: []Flow{
		{Counts: counts(1.05, 3, 80e6, 500_000)},
		{Counts: counts(1.1, 3, 40e6, 100_000)},
	}}
	d := Direction(p)
	var sum int64
	for i, f := range d.Flows {
		want := []float64{80e6, 40e6}[i]
		if math.Abs(f.GoodputBps-want)/want > 1e-3 {
			t.Errorf("flow %d: goodput %.0f, want %.0f", i, f.GoodputBps, want)
		}
		if f.Sender != "server" || f.TCPInfo == nil {
			t.Errorf("flow %d: sender %q, tcpinfo %v", i, f.Sender, f.TCPInfo)
		}
		sum += f.Bytes
	}
	if d.Bytes != sum {
		t.Errorf("direction bytes %d, flows' sum %d", d.Bytes, sum)
	}
	// 80 Mbit/s over 1.95 s and 40 Mbit/s over 1.9 s, in 1.95 s.
	want := (80e6*1.95 + 40e6*1.9) / 1.95
	if math.Abs(d.GoodputBps-want)/want > 1e-3 {
		t.Errorf("direction goodput %.0f, want %.0f", d.GoodputBps, want)
	}
	if d.DurationS != 2 || d.StreamsMode != "fixed" || d.Streams != 2 || len(d.Throughput) == 0 || d.RFC6349 == nil {
		t.Errorf("direction %+v", d)
	}
}

// A flow without counts keeps its own life as its span, and counts nothing.
func TestDirectionNoCounts(t *testing.T) {
	d := Direction(Phase{Direction: protocol.KindUpload, Auto: true, StartS: 0, EndS: 2,
		Flows: []Flow{{StartS: 0.5, EndS: 1.5, DSCP: -1}}})
	f := d.Flows[0]
	if f.StartS != 0.5 || f.EndS != 1.5 || f.Bytes != 0 || f.DSCP != 0 || f.Sender != "client" || f.Throughput == nil {
		t.Errorf("flow %+v", f)
	}
	if d.StreamsMode != "auto" || d.Bytes != 0 || d.GoodputBps != 0 || d.Throughput == nil || d.RPM != nil {
		t.Errorf("direction %+v", d)
	}
}

// RPM by metrics.RPM when its inputs are there; otherwise the measured
// distributions without a number; nil without any probe.
func TestRPM(t *testing.T) {
	base := RTT([]model.RTTSample{{RTTMs: 20}, {RTTMs: 21}}, 0)
	self := []float64{60, 62, 64, 66}
	f := Foreign{TCPMs: []float64{40, 41, 42}, HTTPMs: []float64{44, 45, 46}}
	want, err := metrics.RPM(f.TCPMs, nil, f.HTTPMs, self)
	if err != nil {
		t.Fatal(err)
	}
	r := RPM(f, self, base)
	if r == nil || r.RPM != want || r.TCPMs.N != 3 || r.HTTPMs.N != 3 || r.SelfMs.N != 4 || r.TLSMs != nil {
		t.Fatalf("with foreign probes: %+v, want RPM %.1f", r, want)
	}
	if idle := metrics.IdleRPM([]float64{20, 21}); r.IdleRPM != idle || idle <= 0 {
		t.Errorf("idle RPM %v, want %v", r.IdleRPM, idle)
	}
	f.TLSMs = []float64{10, 11}
	if r := RPM(f, self, nil); r == nil || r.TLSMs == nil || r.TLSMs.N != 2 || r.IdleRPM != 0 {
		t.Fatalf("with TLS, no baseline: %+v", r)
	}
	if r := RPM(Foreign{}, self, base); r == nil || r.RPM != 0 || r.SelfMs.N != 4 || r.TCPMs.N != 0 {
		t.Fatalf("without foreign probes: %+v", r)
	}
	if r := RPM(f, nil, base); r == nil || r.RPM != 0 || r.TCPMs.N != 3 || r.SelfMs.N != 0 {
		t.Fatalf("without self probes: %+v", r)
	}
	if r := RPM(Foreign{}, nil, base); r != nil {
		t.Fatalf("no probes: %+v", r)
	}
}

// The server's idle view is the first probe stream's.
func TestServerBaseline(t *testing.T) {
	b := RTT(nil, 0)
	ServerBaseline(b, []protocol.FlowReport{
		{Kind: protocol.KindDownload, TCPInfo: []model.TCPSample{{RTTUs: 9000, MinRTTUs: 9000}}},
		{Kind: protocol.KindProbe, TCPInfo: []model.TCPSample{{RTTUs: 2000, MinRTTUs: 1500}, {RTTUs: 30000, MinRTTUs: 1200}}},
		{Kind: protocol.KindProbe, TCPInfo: []model.TCPSample{{RTTUs: 40000, MinRTTUs: 1100}}},
	})
	if b.ServerRTTMs != 2 || b.ServerMinRTTMs != 1.2 || b.Samples == nil || b.RTTMs.N != 0 {
		t.Errorf("baseline %+v", b)
	}
	ServerBaseline(nil, nil) // no baseline: nothing to do, no panic
}

func TestForeignNote(t *testing.T) {
	if n := ForeignNote("download", 1, 3); n != "download: 1 of 4 foreign probes got no answer or no new connection to time; RPM stands on the other 3" {
		t.Errorf("note %q", n)
	}
	if n := ForeignNote("upload", 0, 3); n != "" {
		t.Errorf("note without failures: %q", n)
	}
}

// FuzzDirection: whatever the series hold (the page's counts and probes
// are client input, bounded by the server before they get here), the
// result has one flow per input, its bytes are the flows' sum whenever
// the counts span any time (the sum's first and last points hold every
// flow's first and last counts), and it encodes as JSON (no NaN or Inf).
func FuzzDirection(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(2), 0.05)
	f.Add([]byte{255, 0, 255, 0, 1}, uint8(1), 1e9)
	f.Add([]byte{}, uint8(0), -1.0)
	f.Fuzz(func(t *testing.T, data []byte, nFlows uint8, dt float64) {
		if len(data) > 4096 || !(math.Abs(dt) < 1e12) {
			return
		}
		n := int(nFlows%8) + 1
		p := Phase{Direction: protocol.KindDownload, StartS: 0, EndS: 10, Flows: make([]Flow, n)}
		for i, b := range data {
			fl := &p.Flows[i%n]
			ts, bytes := float64(i/n)*math.Abs(dt), int64(b)*1000
			if c := fl.Counts; len(c) > 0 {
				bytes += c[len(c)-1].Bytes
				if b%7 == 0 { // a count that goes backwards
					bytes -= 3000
				}
			}
			fl.Counts = append(fl.Counts, model.ByteCount{TS: ts, Bytes: bytes})
			fl.TCPInfo = append(fl.TCPInfo, model.TCPSample{TS: ts, RTTUs: uint32(b) * 100, SndCwnd: uint32(b), SndMSS: 1448,
				BytesSent: uint64(i) * 1448, PMTU: 1500})
			p.SelfMs = append(p.SelfMs, float64(b))
			p.Foreign.TCPMs = append(p.Foreign.TCPMs, float64(b)/2)
			p.Foreign.HTTPMs = append(p.Foreign.HTTPMs, float64(b))
		}
		p.Latency = RTT([]model.RTTSample{{TS: 1, RTTMs: float64(len(data))}}, 0)
		p.Baseline = RTT([]model.RTTSample{{TS: 0, RTTMs: 1}}, 0)
		d := Direction(p)
		if len(d.Flows) != n {
			t.Fatalf("%d flows, want %d", len(d.Flows), n)
		}
		var sum int64
		for _, f := range d.Flows {
			sum += f.Bytes
		}
		if spans := len(data) > n && dt != 0; spans && d.Bytes != sum {
			t.Fatalf("direction bytes %d, flows' sum %d", d.Bytes, sum)
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
	})
}
