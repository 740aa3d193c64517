package passive

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/model"
)

func analyse(t *testing.T, p *path) (*model.Analysis, *Analyzer, *TruthIndex) {
	t.Helper()
	capture, truthFile := p.files(t)
	a := New(Config{Interface: -1, Identity: true, KeepSamples: true})
	if _, err := a.Read(bytes.NewReader(capture), model.CaptureFile{Path: "synthetic", DamageOffset: -1}); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadTruth(bytes.NewReader(truthFile), "synthetic-truth", 1, 'A')
	if err != nil {
		t.Fatal(err)
	}
	return a.Finish(tr), a, tr
}

// A varying one-way delay: 16 ms plus a slow 0–6 ms queue wave.
func wave(t int64, _ uint8) int64 {
	return 16e6 + int64(3e6*(1+math.Sin(float64(t)/3e8)))
}

func TestTCPTimestampRTTAgainstTruth(t *testing.T) {
	p := &path{delay: wave}
	p.tcpBulk(100e3, 5e9, 0) // a segment every 100 µs (≈116 Mbit/s) for 5 s
	res, _, _ := analyse(t, p)
	if len(res.TCP) != 1 {
		t.Fatalf("%d TCP connections, want 1", len(res.TCP))
	}
	c := res.TCP[0]
	if c.A != "198.18.1.1:40000" || !c.SawSYN {
		t.Errorf("orientation: A=%s saw SYN %v", c.A, c.SawSYN)
	}
	if c.BA.Retransmissions != 0 || c.BA.DataPackets < 49000 {
		t.Errorf("server→client: %+v", c.BA)
	}
	if c.TSSideB.Samples < 4000 || c.TSFull.Samples < 4000 {
		t.Errorf("samples: side B %d, full %d", c.TSSideB.Samples, c.TSFull.Samples)
	}
	if c.TSSideB.MinMs < 32 || c.TSSideB.MaxMs > 44.5 {
		t.Errorf("side B RTT %.3f..%.3f ms outside 32..44.5", c.TSSideB.MinMs, c.TSSideB.MaxMs)
	}
	for _, m := range []string{"ts-side-b", "ts-full"} {
		me := res.Truth.Method(m)
		if me.Matched < 4000 {
			t.Fatalf("%s: %+v", m, me)
		}
		// The server echoes at its next segment (≤ 100 µs) and the
		// client's delayed half adds 1 µs: the error stays < 0.5%.
		if me.MeanAbsPct > 0.5 || me.MaxPct > 1.5 {
			t.Errorf("%s error %+v", m, me)
		}
		t.Logf("%s: %d samples, mean |e| %.3f%%, p99 %.3f%%, max %.3f%%", m, me.Matched, me.MeanAbsPct, me.P99Pct, me.MaxPct)
	}
	// The client acknowledges after 1 µs: SEQ/ACK on the client side.
	if c.SeqAckSideA.Samples < 10000 || c.SeqAckSideA.MaxMs > 0.0011 {
		t.Errorf("seq/ack side A %+v", c.SeqAckSideA)
	}
}

func TestTCPHolesAndRetransmissions(t *testing.T) {
	p := &path{delay: func(int64, uint8) int64 { return 10e6 }}
	p.tcpBulk(1e6, 1e9, 10) // every 10th server segment lost upstream
	// Retransmit two segments 50 ms later (beyond the reordering window).
	var extra []pkt
	for _, q := range p.out {
		if q.dir == 1 && len(q.data) > 1000 && len(extra) < 2 && q.t > 2e8 {
			r := q
			r.t += 50e6
			r.data = bytes.Clone(q.data)
			r.data[5]++ // another IP ID: another packet
			extra = append(extra, r)
		}
	}
	p.out = append(p.out, extra...)
	res, _, _ := analyse(t, p)
	c := res.TCP[0]
	if c.BA.Retransmissions != 2 {
		t.Errorf("retransmissions %d, want 2", c.BA.Retransmissions)
	}
	if c.BA.UniqueBytes != uint64(c.BA.DataPackets-2)*1448 {
		t.Errorf("unique bytes %d for %d data packets", c.BA.UniqueBytes, c.BA.DataPackets)
	}
}

func TestSpinRTTAgainstTruth(t *testing.T) {
	for _, c := range []struct {
		name   string
		gap    int64
		glitch int
	}{
		{"fast", 100e3, 0},
		{"slow", 2e6, 0},
		{"reordered", 300e3, 97},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &path{delay: wave}
			p.quicSpin(c.gap, 5e9, rand.New(rand.NewPCG(1, 2)), c.glitch)
			res, _, _ := analyse(t, p)
			if len(res.QUIC) != 1 {
				t.Fatalf("%d QUIC flows", len(res.QUIC))
			}
			q := res.QUIC[0]
			if q.Spin != "spinning" || q.DCIDLen != [2]int{4, 8} || q.Version != "v1" || q.Coalesced != 1 {
				t.Fatalf("flow %+v", q)
			}
			if c.glitch > 0 && q.Glitches[0] == 0 {
				t.Errorf("no reordering glitches detected: %+v", q)
			}
			for _, m := range []string{"spin-full-up", "spin-full-down", "spin-side-server"} {
				me := res.Truth.Method(m)
				if me.Matched < 100 {
					t.Fatalf("%s: %+v (rejected %v)", m, me, q.Rejected)
				}
				// Each edge waits for the endpoint's next packet: the error
				// is bounded by the packet gap relative to the RTT.
				bound := 100 * float64(2*c.gap) / 32e6
				if me.MeanAbsPct > max(0.5, bound/2) || me.MaxPct > max(1, 2*bound) {
					t.Errorf("%s error %+v", m, me)
				}
				t.Logf("%s: %d samples (%.1f/s), mean |e| %.3f%%, max %.3f%%", m, me.Matched, me.SamplesPerS, me.MeanAbsPct, me.MaxPct)
			}
		})
	}
}

// A filter on a file keeps the matching flows whole and counts what it
// left out.
func TestFilterOnFile(t *testing.T) {
	p := &path{delay: func(int64, uint8) int64 { return 10e6 }}
	p.tcpBulk(1e6, 3e8, 0)
	p.quicSpin(1e6, 3e8, nil, 0)
	capture, _ := p.files(t)
	run := func(expr string) *model.Analysis {
		f, err := capfilter.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		a := New(Config{Interface: -1, Filter: f})
		if _, err := a.Read(bytes.NewReader(capture), model.CaptureFile{Path: "synthetic", DamageOffset: -1}); err != nil {
			t.Fatal(err)
		}
		return a.Finish(nil)
	}
	all := run("")
	tcp := run("tcp")
	udp := run("udp and host 198.18.1.2")
	if len(all.TCP) != 1 || len(all.QUIC) != 1 || all.Filtered != 0 || all.Filter != "" {
		t.Fatalf("no filter: %d TCP, %d QUIC, %d filtered", len(all.TCP), len(all.QUIC), all.Filtered)
	}
	if len(tcp.TCP) != 1 || len(tcp.QUIC) != 0 || tcp.Filter != "tcp" || tcp.Packets+tcp.Filtered != all.Packets ||
		tcp.TCP[0].AB.Packets != all.TCP[0].AB.Packets {
		t.Errorf("tcp: %d TCP, %d QUIC, %d + %d filtered of %d", len(tcp.TCP), len(tcp.QUIC), tcp.Packets, tcp.Filtered, all.Packets)
	}
	if len(udp.TCP) != 0 || len(udp.QUIC) != 1 || udp.Packets+udp.Filtered != all.Packets || udp.QUIC[0].Packets != all.QUIC[0].Packets {
		t.Errorf("udp: %d TCP, %d QUIC, %d + %d filtered of %d", len(udp.TCP), len(udp.QUIC), udp.Packets, udp.Filtered, all.Packets)
	}
}
