package passive

import (
	"testing"

	"github.com/sonde-project/sonde/internal/passive/spinbit"
)

// FuzzPacket feeds arbitrary bytes as IP packets, in both directions of
// one flow, through the whole analyser: nothing may panic.
func FuzzPacket(f *testing.F) {
	p := &path{delay: wave}
	p.tcpBulk(1e6, 3e7, 0)
	p.quicSpin(1e6, 3e7, nil, 0)
	for _, q := range p.out {
		f.Add(q.data)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a := New(Config{Interface: -1, Identity: true, KeepSamples: true, QUICPorts: []uint16{4433}})
		for i := range 3 {
			a.Packet(int64(i)*1e6, b)
		}
		a.Finish(nil)
	})
}

func FuzzQUICHeader(f *testing.F) {
	f.Add([]byte{0xc0, 0, 0, 0, 1, 4, 1, 2, 3, 4, 0, 0, 0x40, 2, 0, 0, 0x40, 1, 2, 3, 4})
	f.Add([]byte{0x60, 1, 2, 3, 4, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h spinbit.Header
		for n := 0; len(b) > 0 && n < 16; n++ {
			rest, err := spinbit.Parse(b, 8, &h)
			if err != nil {
				return
			}
			if len(rest) >= len(b) {
				t.Fatalf("no progress: %d → %d", len(b), len(rest))
			}
			b = rest
		}
	})
}

func BenchmarkAnalyzeTCP(b *testing.B) {
	p := &path{delay: wave}
	p.tcpBulk(10e3, 1e9, 0)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		a := New(Config{Interface: -1})
		for _, q := range p.out {
			a.Packet(q.t, q.data)
		}
		n += len(p.out)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Mpps")
}
