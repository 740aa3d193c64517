package metrics

import (
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func TestFormulas(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		// 1 Gbit/s × 20 ms = 20 Mbit = 2.5 MB in flight.
		{"BDP 1G 20ms", BDPBits(1e9, 0.020), 2e7},
		{"BDP 100M 50ms", BDPBits(100e6, 0.050), 5e6},
		{"BDP no RTT", BDPBits(1e9, 0), 0},
		// A 64 KiB − 1 window over 20 ms: 65535·8/0.02 = 26.214 Mbit/s.
		{"T 64K 20ms", MaxAchievableBps(65535, 0.020), 26.214e6},
		{"T 2.5MB 20ms fills 1G", MaxAchievableBps(2.5e6, 0.020), 1e9},
		{"T no RTT", MaxAchievableBps(65535, 0), 0},
		// metrics.md §1: 1460/1538 × 1 Gbit/s = 949.28 Mbit/s.
		{"max goodput 1460", MaxGoodputBps(1460, WireFrameBytes(1500, false), 1e9), 1e9 * 1460 / 1538},
		// Linux with timestamps: snd_mss 1448 → 941.48 Mbit/s.
		{"max goodput 1448", MaxGoodputBps(1448, 1538, 1e9), 941.482444733420e6},
		// 802.1Q: 1460/1542.
		{"max goodput vlan", MaxGoodputBps(1460, WireFrameBytes(1500, true), 1e9), 946.822308690013e6},
		{"max goodput no rate", MaxGoodputBps(1460, 1538, 0), 0},
		// 100 MB at 949.28 Mbit/s: 8e8 / 949.284785e6 = 0.84274 s.
		{"ITT 100MB", IdealTransferS(100e6, 1e9*1460/1538), 8e8 * 1538 / 1460 / 1e9},
		{"ITT 1.25GB at 1G", IdealTransferS(1.25e9, 1e9), 10},
		{"ITT no rate", IdealTransferS(1e6, 0), 0},
		// RFC 6349 §4.1: actual 12 s against an ideal 10 s is 1.2, not 0.83.
		{"TTR", TTR(12, 10), 1.2},
		{"TTR no ideal", TTR(12, 0), 0},
		{"buffer delay 20→30 ms", BufferDelayPct(30, 20), 50},
		{"buffer delay 19→472 ms", BufferDelayPct(472, 19), 100 * 453.0 / 19},
		{"buffer delay no baseline", BufferDelayPct(30, 0), 0},
	}
	for _, tt := range tests {
		if !near(tt.got, tt.want, 1e-9) {
			t.Errorf("%s = %.12g, want %.12g", tt.name, tt.got, tt.want)
		}
	}
	// The figure metrics.md quotes, to its precision.
	if got := MaxGoodputBps(1460, 1538, 1e9) / 1e6; got < 949.28 || got >= 949.29 {
		t.Errorf("1460/1538 × 1 Gbit/s = %.4f Mbit/s, want 949.28", got)
	}
}

func TestWireFrameBytes(t *testing.T) {
	tests := []struct {
		mtu  int
		vlan bool
		want int
	}{{1500, false, 1538}, {1500, true, 1542}, {9000, false, 9038}, {552, false, 590}}
	for _, tt := range tests {
		if got := WireFrameBytes(tt.mtu, tt.vlan); got != tt.want {
			t.Errorf("WireFrameBytes(%d, %v) = %d, want %d", tt.mtu, tt.vlan, got, tt.want)
		}
	}
}

func TestEfficiencyPct(t *testing.T) {
	tests := []struct {
		name        string
		first, last model.TCPSample
		pct         float64
		sent, retr  uint64
	}{
		// 100 MB sent in the window, 1 MB of it retransmissions: 99%. The
		// lifetime counters (10% retransmitted before the window) would
		// give 96%: the window's deltas must be used.
		{"one percent",
			model.TCPSample{BytesSent: 50e6, BytesRetrans: 5e6},
			model.TCPSample{BytesSent: 150e6, BytesRetrans: 6e6},
			99, 100e6, 1e6},
		{"clean", model.TCPSample{BytesSent: 1000}, model.TCPSample{BytesSent: 2000}, 100, 1000, 0},
		// Seed 000's 5% loss figure: 94.85% efficiency.
		{"seed 000 5%", model.TCPSample{}, model.TCPSample{BytesSent: 100000, BytesRetrans: 5150}, 94.85, 100000, 5150},
		{"nothing sent", model.TCPSample{BytesSent: 7}, model.TCPSample{BytesSent: 7}, 0, 0, 0},
		{"counters backwards", model.TCPSample{BytesSent: 9}, model.TCPSample{BytesSent: 7}, 0, 0, 0},
		{"all retransmitted", model.TCPSample{}, model.TCPSample{BytesSent: 10, BytesRetrans: 10}, 0, 10, 10},
	}
	for _, tt := range tests {
		pct, sent, retr := EfficiencyPct(tt.first, tt.last)
		if !near(pct, tt.pct, 1e-12) || sent != tt.sent || retr != tt.retr {
			t.Errorf("%s: EfficiencyPct = %g, %d, %d; want %g, %d, %d", tt.name, pct, sent, retr, tt.pct, tt.sent, tt.retr)
		}
	}
}

func TestAttribute(t *testing.T) {
	// Counters start at arbitrary lifetime values; only deltas count.
	base := model.TCPSample{BusyTimeUs: 5e6, RwndLimitedUs: 4e6, SndbufLimitedUs: 1e6}
	at := func(busy, rwnd, sndbuf uint64) model.TCPSample {
		return model.TCPSample{
			BusyTimeUs:      base.BusyTimeUs + busy,
			RwndLimitedUs:   base.RwndLimitedUs + rwnd,
			SndbufLimitedUs: base.SndbufLimitedUs + sndbuf,
		}
	}
	tests := []struct {
		name         string
		last         model.TCPSample
		rwnd, sndbuf float64
		verdict      string
	}{
		{"receiver window", at(1e6, 600e3, 0), 60, 0, VerdictReceiverWindow},
		{"sender buffer", at(1e6, 0, 700e3), 0, 70, VerdictSenderBuffer},
		{"network", at(1e6, 100e3, 300e3), 10, 30, VerdictNetwork},
		{"plurality rwnd", at(1e6, 400e3, 350e3), 40, 35, VerdictReceiverWindow},
		{"plurality sndbuf", at(1e6, 300e3, 400e3), 30, 40, VerdictSenderBuffer},
		{"tie goes to network", at(1e6, 500e3, 0), 50, 0, VerdictNetwork},
		{"rwnd ties sndbuf", at(1e6, 450e3, 450e3), 45, 45, VerdictReceiverWindow},
		{"idle", at(0, 0, 0), 0, 0, VerdictUnknown},
	}
	for _, tt := range tests {
		b := Attribute(base, tt.last)
		if !near(b.RwndLimitedPct, tt.rwnd, 1e-12) || !near(b.SndbufLimitedPct, tt.sndbuf, 1e-12) || b.Verdict != tt.verdict {
			t.Errorf("%s: got %+v, want rwnd %g%% sndbuf %g%% %q", tt.name, b, tt.rwnd, tt.sndbuf, tt.verdict)
		}
	}
}
