package metrics

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// flowSeries is a sender's TCP_INFO sampled every 100 ms for 10 s (101
// samples, k = 0..100, TS = k/10) with a 20 ms RTT, snd_mss 1448, path MTU
// 1500 and the given snd_wnd.
//
//   - Before warmAt: slow start (ssthresh infinite, cwnd doubling to 200,
//     delivery rate doubling), 100 kB sent per step, nothing retransmitted.
//   - From warmAt: ssthresh 100, cwnd 100, 100 Mbit/s (1.25 MB per step),
//     1% retransmitted; with burst, the first five steps after warmAt
//     retransmit 10% instead (they must fall outside a window that starts
//     later).
//   - Busy the whole time (100 ms per step), rwnd-limited rwndFrac of it.
//   - rcv_space 65536 + k.
func flowSeries(warmAt, rwndFrac float64, sndWnd uint32, burst bool) []model.TCPSample {
	var out []model.TCPSample
	var sent, retr, busy, rwnd uint64
	var warmK = -1
	for k := 0; k <= 100; k++ {
		ts := float64(k) / 10
		s := model.TCPSample{
			TS: ts, RTTUs: 20000, SndMSS: 1448, PMTU: 1500, SndWnd: sndWnd,
			RcvSpace: 65536 + uint32(k),
		}
		if k > 0 {
			busy += 100000
			rwnd += uint64(rwndFrac * 100000)
		}
		if ts < warmAt {
			s.SndSsthresh = InfiniteSsthresh
			s.SndCwnd = uint32(min(10<<k, 200))
			s.DeliveryRateBps = math.Ldexp(1e5, k)
			if k > 0 {
				sent += 100e3
			}
		} else {
			if warmK < 0 {
				warmK = k
			}
			s.SndSsthresh, s.SndCwnd, s.DeliveryRateBps = 100, 100, 1e8
			if k > warmK {
				sent += 1.25e6
				if burst && k-warmK <= 5 {
					retr += 125e3
				} else {
					retr += 12.5e3
				}
			}
		}
		s.BytesSent, s.BytesRetrans, s.BusyTimeUs, s.RwndLimitedUs = sent, retr, busy, rwnd
		out = append(out, s)
	}
	return out
}

func TestFinishFlow(t *testing.T) {
	f := model.Flow{ID: 1, TCPInfo: flowSeries(0.5, 0.7, 200000, true)}
	FinishFlow(&f, -1, math.Inf(1))
	// Window from the flow's own warm-up (0.5 s, k = 5) to the end: 95
	// steps of 1.25 MB; retransmitted 5 × 125 kB + 90 × 12.5 kB = 1.75 MB.
	wantEff := 100 * (118.75e6 - 1.75e6) / 118.75e6
	if f.WarmupS != 0.5 || f.WarmupHow != WarmupSsthresh {
		t.Errorf("warm-up %g %q, want 0.5 ssthresh", f.WarmupS, f.WarmupHow)
	}
	if f.BytesSent != 118.75e6 || f.BytesRetrans != 1.75e6 || !near(f.EfficiencyPct, wantEff, 1e-12) {
		t.Errorf("efficiency %g%% (%d sent, %d retrans), want %g%% (118750000, 1750000)", f.EfficiencyPct, f.BytesSent, f.BytesRetrans, wantEff)
	}
	if f.Bottleneck.Verdict != VerdictReceiverWindow || !near(f.Bottleneck.RwndLimitedPct, 70, 1e-12) {
		t.Errorf("bottleneck %+v, want receiver window at 70%%", f.Bottleneck)
	}
	// min(snd_wnd 200000, cwnd 100 × 1448) = 144800 B over 20 ms.
	if !near(f.MaxAchievableBps, 144800*8/0.02, 1e-12) {
		t.Errorf("max achievable %g, want %g", f.MaxAchievableBps, 144800*8/0.02)
	}

	// An explicit window [1, 10] s leaves out the 10% retransmissions.
	FinishFlow(&f, 1, 10)
	if f.BytesSent != 112.5e6 || f.BytesRetrans != 1.125e6 || !near(f.EfficiencyPct, 99, 1e-12) {
		t.Errorf("window [1,10]: efficiency %g%% (%d, %d), want 99%% (112500000, 1125000)", f.EfficiencyPct, f.BytesSent, f.BytesRetrans)
	}
	if f.WarmupS != 0.5 {
		t.Errorf("an explicit window changed WarmupS to %g", f.WarmupS)
	}

	// No warm-up detected: -1, and the whole series is the window.
	g := model.Flow{TCPInfo: slowStart(10)}
	g.TCPInfo[9].BusyTimeUs = 1000
	FinishFlow(&g, -1, math.Inf(1))
	if g.WarmupS != -1 || g.WarmupHow != "" || g.Bottleneck.Verdict != VerdictNetwork {
		t.Errorf("no warm-up: %g %q %q, want -1, \"\", network over the whole series", g.WarmupS, g.WarmupHow, g.Bottleneck.Verdict)
	}

	// One sample in the window: nothing to difference.
	FinishFlow(&f, 5, 5.05)
	if f.BytesSent != 0 || f.EfficiencyPct != 0 || f.Bottleneck.Verdict != VerdictUnknown || f.MaxAchievableBps != 0 {
		t.Errorf("one-sample window left %+v", f)
	}
}

// direction is a download of two flows over 10 s: flow 1 leaves slow
// start at 0.5 s and is receiver-window limited 70% of the time, flow 2
// leaves it at 1.0 s and is network limited. The receiver counts 200
// Mbit/s (2.5 MB per 100 ms) throughout. Probe RTTs are 100 ms during
// warm-up and 30 ms after 1 s.
func direction() (*model.DirectionResult, []ByteCount) {
	d := &model.DirectionResult{
		Direction: "download",
		Flows: []model.Flow{
			{ID: 1, StartS: 0, EndS: 10, Sender: "server", SndBufBytes: 4 << 20, TCPInfo: flowSeries(0.5, 0.7, 200000, true)},
			{ID: 2, StartS: 0, EndS: 10, Sender: "server", SndBufBytes: 2 << 20, RcvBufBytes: 6 << 20, TCPInfo: flowSeries(1.0, 0, 100000, false)},
		},
		Latency: &model.RTTResult{},
	}
	var counts []ByteCount
	for k := 0; k <= 100; k++ {
		ts := float64(k) / 10
		counts = append(counts, ByteCount{TS: ts, Bytes: int64(k) * 2.5e6})
		rtt := 30.0
		if ts < 1 {
			rtt = 100
		}
		d.Latency.Samples = append(d.Latency.Samples, model.RTTSample{TS: ts, RTTMs: rtt})
	}
	return d, counts
}

func TestBuildRFC6349(t *testing.T) {
	d, counts := direction()
	r := BuildRFC6349(d, counts, 20, 1e9, EthernetOverhead)

	// Window [1, 10] s: 9 s, 225 MB, 200 Mbit/s.
	maxGoodput := 1448.0 / 1538 * 1e9
	itt := 225e6 * 8 / maxGoodput
	checks := []struct {
		name      string
		got, want float64
	}{
		{"window start", r.WindowStartS, 1},
		{"window end", r.WindowEndS, 10},
		{"duration", r.DurationS, 9},
		{"bytes", float64(r.Bytes), 225e6},
		{"goodput", r.GoodputBps, 200e6},
		{"path MTU", float64(r.PathMTU), 1500},
		{"MSS", float64(r.MSS), 1448},
		{"link rate", r.LinkRateBps, 1e9},
		{"max goodput", r.MaxGoodputBps, maxGoodput}, // 941.48 Mbit/s
		{"BDP", r.BDPBits, 2e7},
		{"ideal transfer", r.IdealTransferS, itt}, // 1.9118 s
		{"TTR", r.TTR, 9 / itt},                   // 4.7076
		// 2 × 90 steps of 1.25 MB, 1% retransmitted.
		{"bytes sent", float64(r.BytesSent), 225e6},
		{"bytes retrans", float64(r.BytesRetrans), 2.25e6},
		{"efficiency", r.EfficiencyPct, 99},
		{"baseline", r.BaselineRTTMs, 20},
		{"loaded RTT", r.LoadedRTTMeanMs, 30},
		{"buffer delay", r.BufferDelayPct, 50},
		// Slow start's cwnd of 200 lies before the window.
		{"max cwnd", float64(r.MaxCwndBytes), 100 * 1448},
		{"max snd_wnd", float64(r.MaxSndWndBytes), 200000},
		{"max rcv_space", float64(r.MaxRcvSpaceBytes), 65636},
		{"sndbuf", float64(r.SndBufBytes), 4 << 20},
		{"rcvbuf", float64(r.RcvBufBytes), 6 << 20},
		// Flow 1: 144800 B / 20 ms; flow 2: snd_wnd 100000 B / 20 ms.
		{"max achievable", r.MaxAchievableBps, 144800*8/0.02 + 100000*8/0.02},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-9) {
			t.Errorf("%s = %.10g, want %.10g", c.name, c.got, c.want)
		}
	}
	if r.Bottleneck != "network (1 of 2 flows)" {
		t.Errorf("bottleneck %q, want %q", r.Bottleneck, "network (1 of 2 flows)")
	}
	if len(r.Notes) != 0 {
		t.Errorf("unexpected notes %q", r.Notes)
	}
	// The flows were finished over the common window.
	f1, f2 := d.Flows[0], d.Flows[1]
	if f1.WarmupS != 0.5 || f2.WarmupS != 1 || f1.BytesSent != 112.5e6 || f2.BytesSent != 112.5e6 {
		t.Errorf("flows: warm-up %g, %g; sent %d, %d", f1.WarmupS, f2.WarmupS, f1.BytesSent, f2.BytesSent)
	}
	if f1.Bottleneck.Verdict != VerdictReceiverWindow || f2.Bottleneck.Verdict != VerdictNetwork {
		t.Errorf("flow verdicts %q, %q", f1.Bottleneck.Verdict, f2.Bottleneck.Verdict)
	}
}

func TestBuildRFC6349Caveats(t *testing.T) {
	hasNote := func(r *model.RFC6349, sub string) bool {
		return slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, sub) })
	}

	t.Run("no link rate", func(t *testing.T) {
		d, counts := direction()
		r := BuildRFC6349(d, counts, 20, 0, EthernetOverhead)
		if !hasNote(r, "TTR needs --link-rate") || r.TTR != 0 || r.MaxGoodputBps != 0 || r.BDPBits != 0 || r.IdealTransferS != 0 {
			t.Errorf("without a link rate: %+v", r)
		}
		if r.GoodputBps != 200e6 || !near(r.EfficiencyPct, 99, 1e-12) {
			t.Errorf("without a link rate goodput %g, efficiency %g", r.GoodputBps, r.EfficiencyPct)
		}
	})

	t.Run("no warm-up detected", func(t *testing.T) {
		d, counts := direction()
		// Flow 2 never leaves slow start as far as TCP_INFO shows.
		for i := range d.Flows[1].TCPInfo {
			s := &d.Flows[1].TCPInfo[i]
			s.SndSsthresh, s.DeliveryRateBps = InfiniteSsthresh, math.Ldexp(1e5, i)
		}
		r := BuildRFC6349(d, counts, 20, 1e9, EthernetOverhead)
		if r.WindowStartS != 0.5 || !hasNote(r, "flow 2: no end of slow start detected") {
			t.Errorf("window start %g, notes %q", r.WindowStartS, r.Notes)
		}
	})

	t.Run("warm-up past the end", func(t *testing.T) {
		d, counts := direction()
		d.Flows[1].TCPInfo = flowSeries(20, 0, 100000, false) // never within 10 s…
		d.Flows[1].TCPInfo[100].SndSsthresh = 50              // …until the last sample
		r := BuildRFC6349(d, counts, 20, 1e9, EthernetOverhead)
		if r.WindowStartS != 0 || r.DurationS != 10 || !hasNote(r, "the window is the whole phase") {
			t.Errorf("window [%g, %g], notes %q", r.WindowStartS, r.WindowEndS, r.Notes)
		}
	})

	t.Run("no probes or baseline", func(t *testing.T) {
		d, counts := direction()
		d.Latency = nil
		r := BuildRFC6349(d, counts, 0, 1e9, EthernetOverhead)
		if r.BufferDelayPct != 0 || !hasNote(r, "no latency probes") || !hasNote(r, "BDP not computed") {
			t.Errorf("buffer delay %g, notes %q", r.BufferDelayPct, r.Notes)
		}
		d, counts = direction()
		r = BuildRFC6349(d, counts, 0, 1e9, EthernetOverhead)
		if r.LoadedRTTMeanMs != 30 || r.BufferDelayPct != 0 || !hasNote(r, "no baseline RTT; buffer delay") {
			t.Errorf("loaded %g, buffer delay %g, notes %q", r.LoadedRTTMeanMs, r.BufferDelayPct, r.Notes)
		}
	})

	t.Run("VLAN overhead", func(t *testing.T) {
		d, counts := direction()
		r := BuildRFC6349(d, counts, 20, 1e9, EthernetOverhead+VLANTagBytes)
		if !near(r.MaxGoodputBps, 1448.0/1542*1e9, 1e-12) {
			t.Errorf("max goodput %g, want %g", r.MaxGoodputBps, 1448.0/1542*1e9)
		}
	})

	t.Run("link rate too low", func(t *testing.T) {
		d, counts := direction()
		r := BuildRFC6349(d, counts, 20, 100e6, EthernetOverhead) // goodput is 200 Mbit/s
		if r.TTR >= 1 || !hasNote(r, "check --link-rate") {
			t.Errorf("TTR %g, notes %q", r.TTR, r.Notes)
		}
	})

	t.Run("empty", func(t *testing.T) {
		r := BuildRFC6349(&model.DirectionResult{}, nil, 20, 1e9, EthernetOverhead)
		if !hasNote(r, "no duration") {
			t.Errorf("notes %q", r.Notes)
		}
		if r := BuildRFC6349(nil, nil, 0, 0, EthernetOverhead); !hasNote(r, "no load phase") {
			t.Errorf("nil: notes %q", r.Notes)
		}
	})

	t.Run("no counts", func(t *testing.T) {
		d, _ := direction()
		r := BuildRFC6349(d, nil, 20, 1e9, EthernetOverhead)
		if r.Bytes != 0 || r.GoodputBps != 0 || !hasNote(r, "no receiver byte counts") || !near(r.EfficiencyPct, 99, 1e-12) {
			t.Errorf("bytes %d goodput %g efficiency %g notes %q", r.Bytes, r.GoodputBps, r.EfficiencyPct, r.Notes)
		}
	})
}

func TestSummariseVerdicts(t *testing.T) {
	tests := []struct {
		counts map[string]int
		n      int
		want   string
	}{
		{map[string]int{VerdictNetwork: 3}, 3, VerdictNetwork},
		{map[string]int{VerdictReceiverWindow: 2, VerdictNetwork: 1}, 3, "receiver window (2 of 3 flows)"},
		{map[string]int{VerdictSenderBuffer: 1, VerdictReceiverWindow: 1}, 2, "receiver window (1 of 2 flows)"},
		{map[string]int{}, 0, VerdictUnknown},
	}
	for _, tt := range tests {
		if got := summariseVerdicts(tt.counts, tt.n); got != tt.want {
			t.Errorf("summariseVerdicts(%v) = %q, want %q", tt.counts, got, tt.want)
		}
	}
}
