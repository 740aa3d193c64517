package report

import (
	"math"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// The synthetic result models a lab path: 20 ms base RTT, 100 Mbit/s down
// with a 256 KiB queue (21 ms), 20 Mbit/s up with a 1 MiB queue (419 ms).
// Figures are deterministic (sines, not random numbers) so tests can assert
// on them.

func intPtr(v int) *int    { return &v }
func boolPtr(v bool) *bool { return &v }

// wobble is a deterministic stand-in for noise in [-1, 1].
func wobble(i int, seed float64) float64 {
	return math.Sin(float64(i)*1.7+seed) * math.Cos(float64(i)*0.31+2*seed)
}

func statsOf(xs []float64) model.Stats {
	if len(xs) == 0 {
		return model.Stats{}
	}
	s := append([]float64(nil), xs...)
	// Insertion sort keeps the fixture free of extra imports.
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	q := func(p float64) float64 { return s[int(math.Round(p*float64(len(s)-1)))] }
	var sum, sq float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	for _, x := range s {
		sq += (x - mean) * (x - mean)
	}
	return model.Stats{N: len(s), Min: s[0], P10: q(0.1), P50: q(0.5), P90: q(0.9), P99: q(0.99),
		P999: q(0.999), Max: s[len(s)-1], Mean: mean, Stddev: math.Sqrt(sq / float64(len(s)))}
}

func rttResult(start, dur, interval, base, queueMs float64, seed float64) *model.RTTResult {
	var samples []model.RTTSample
	var rtts []float64
	n := int(dur / interval)
	for i := 0; i < n; i++ {
		ts := start + float64(i)*interval
		frac := float64(i) / float64(n)
		// The queue fills over the first fifth of the phase, then saws.
		fill := math.Min(1, frac*5) * (0.8 + 0.2*math.Abs(wobble(i, seed)))
		rtt := base + 0.15 + 0.1*math.Abs(wobble(i, seed+1)) + queueMs*fill
		samples = append(samples, model.RTTSample{TS: ts, RTTMs: rtt, ServerMs: 0.02})
		rtts = append(rtts, rtt)
	}
	st := statsOf(rtts)
	return &model.RTTResult{RTTMs: st, Samples: samples,
		ClientMinRTTMs: base + 0.05, ClientRTTMs: st.Mean, ServerMinRTTMs: base + 0.07, ServerRTTMs: st.Mean}
}

func flowFixture(id int, sender string, start, dur, rateBps, rttMs float64, verdict string) model.Flow {
	const step = 0.1
	n := int(dur / step)
	var tput []model.RatePoint
	var tis []model.TCPSample
	var bytes float64
	warm := start + 0.6 + 0.1*float64(id)
	for i := 1; i <= n; i++ {
		ts := start + float64(i)*step
		r := rateBps * (1 + 0.08*wobble(i, float64(id)))
		if ts < warm {
			r = rateBps * math.Pow(2, (ts-warm)/0.08)
		}
		bytes += r * step / 8
		tput = append(tput, model.RatePoint{TS: ts, Bps: r})
		bdpSeg := rateBps * rttMs / 1000 / 8 / 1448
		cwnd := bdpSeg * (1.2 + 0.5*math.Mod(float64(i+7*id), 25)/25)
		if ts < warm {
			cwnd = 10 * math.Pow(2, (ts-start)/(rttMs/1000))
			cwnd = math.Min(cwnd, 2.5*bdpSeg)
		}
		tis = append(tis, model.TCPSample{TS: ts, SndCwnd: uint32(cwnd), SndMSS: 1448, PMTU: 1500,
			RTTUs: uint32(rttMs * 1000), MinRTTUs: 20000})
	}
	sent := uint64(bytes * 1.002)
	return model.Flow{ID: id, StartS: start, EndS: start + dur, Bytes: int64(bytes),
		GoodputBps: bytes * 8 / dur, WarmupS: warm, WarmupHow: "ssthresh set",
		Throughput: tput, Sender: sender, TCPInfo: tis, EfficiencyPct: 99.8,
		BytesSent: sent, BytesRetrans: sent / 500,
		Bottleneck:       model.Bottleneck{RwndLimitedPct: 0.4, Verdict: verdict},
		MaxAchievableBps: rateBps * 1.4}
}

func aggregate(flows []model.Flow) []model.RatePoint {
	if len(flows) == 0 {
		return nil
	}
	out := make([]model.RatePoint, len(flows[0].Throughput))
	for i := range out {
		out[i].TS = flows[0].Throughput[i].TS
		for _, f := range flows {
			if i < len(f.Throughput) {
				out[i].Bps += f.Throughput[i].Bps
			}
		}
	}
	return out
}

func directionFixture(dir, sender, mode string, nflows int, start, dur, totalBps, base, queueMs float64) *model.DirectionResult {
	var flows []model.Flow
	for i := 1; i <= nflows; i++ {
		v := "network"
		if i == nflows && nflows > 2 {
			v = "receiver window"
		}
		flows = append(flows, flowFixture(i, sender, start, dur, totalBps/float64(nflows), base+queueMs, v))
	}
	var bytes int64
	for _, f := range flows {
		bytes += f.Bytes
	}
	lat := rttResult(start, dur, 0.1, base, queueMs, 3)
	ws := start + 2
	return &model.DirectionResult{
		Direction: dir, StreamsMode: mode, Streams: nflows, DurationS: dur, Bytes: bytes,
		GoodputBps: float64(bytes) * 8 / dur, Throughput: aggregate(flows), Flows: flows,
		Latency: lat,
		RPM: &model.RPM{RPM: 60000 / (base + queueMs), IdleRPM: 60000 / base,
			TCPMs: model.Stats{N: 20, P50: base + queueMs}, HTTPMs: model.Stats{N: 20, P50: base + queueMs + 0.4},
			SelfMs: model.Stats{N: 20, P50: base + queueMs + 1.1}},
		RFC6349: &model.RFC6349{
			WindowStartS: ws, WindowEndS: start + dur, DurationS: start + dur - ws,
			Bytes: int64(totalBps * (start + dur - ws) / 8 * 0.95), GoodputBps: totalBps * 0.95,
			PathMTU: 1500, MSS: 1448, EfficiencyPct: 99.8, BytesSent: uint64(bytes), BytesRetrans: uint64(bytes) / 500,
			BaselineRTTMs: base + 0.15, LoadedRTTMeanMs: lat.RTTMs.Mean,
			BufferDelayPct: 100 * (lat.RTTMs.Mean - base - 0.15) / (base + 0.15),
			MaxCwndBytes:   uint64(totalBps * (base + queueMs) / 1000 / 8 * 1.7), MaxSndWndBytes: 3 << 20,
			MaxRcvSpaceBytes: 6 << 20, MaxAchievableBps: totalBps * 1.4, Bottleneck: "network",
			Notes: []string{"window excludes warm-up (ssthresh set at " + "2.0 s)"},
		},
	}
}

// fullResult is a complete lab run with both directions and QoS classes.
func fullResult() *model.Result {
	start := time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)
	r := &model.Result{
		Schema: model.SchemaVersion, ID: "r-0001",
		Start: start, End: start.Add(25 * time.Second),
		Client: model.Endpoint{Address: "198.18.0.1:40000", Software: "sonde 0.1", Hostname: "cli", Kernel: "Linux 6.1"},
		Server: model.Endpoint{Address: "198.18.0.2:8080", Software: "sonde 0.1", Hostname: "srv", Kernel: "Linux 6.1"},
		Config: model.TestConfig{Server: "198.18.0.2:8080", Streams: "auto", DurationS: 10, ProbeMs: 100,
			LinkRateBps: 100e6},
		Baseline: rttResult(0, 1, 0.01, 20, 0, 1),
		Truth: &model.GroundTruth{Profile: "cable", BaseRTTMs: 20, DownRateBps: 100e6, UpRateBps: 20e6,
			DownLoss: 0.001, DownQueueBytes: 256 << 10, UpQueueBytes: 1 << 20, MTU: 1500},
		Notes: []string{"upload queue is 22x the BDP"},
	}
	r.Download = directionFixture("download", "server", "auto", 4, 1, 10, 94.9e6, 20, 21)
	r.Upload = directionFixture("upload", "client", "fixed", 1, 12, 10, 18.9e6, 20, 400)
	// TTR and BDP need --link-rate: give them to download only.
	f := r.Download.RFC6349
	f.LinkRateBps, f.MaxGoodputBps = 100e6, 100e6*1448/1538
	f.BDPBits = 100e6 * 0.020
	f.IdealTransferS = float64(f.Bytes) * 8 / f.MaxGoodputBps
	f.TTR = f.DurationS / f.IdealTransferS
	r.Upload.RFC6349.Notes = nil
	r.Classes = &model.ClassesResult{DurationS: 5, Flows: []model.ClassFlow{
		{Class: model.Class{Name: "EF", DSCP: 46}, Direction: "upload", GoodputBps: 2.1e6,
			RTTMs: &model.Stats{N: 50, P50: 21.2, P90: 24}, ReceivedDSCP: intPtr(46), MarksOK: boolPtr(true)},
		{Class: model.Class{Name: "AF41", DSCP: 34}, Direction: "upload", GoodputBps: 8.4e6,
			RTTMs: &model.Stats{N: 50, P50: 380, P90: 410}, ReceivedDSCP: intPtr(0), MarksOK: boolPtr(false)},
		{Class: model.Class{Name: "BE", DSCP: 0}, Direction: "upload", GoodputBps: 8.3e6},
	}}
	return r
}
