package stamp

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"
)

// echoReflector answers every probe on a loopback socket with Reflect, so
// that the sender's receiver works as in a real run while it is measured.
func echoReflector(tb testing.TB) string {
	tb.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pc.Close() })
	go func() {
		in := make([]byte, MaxPacketLen)
		out := make([]byte, MaxPacketLen)
		var seq uint32
		for {
			n, from, err := pc.ReadFrom(in)
			if err != nil {
				return
			}
			if n < BaseLen {
				continue
			}
			Reflect(out[:n], in[:n], ReflectInfo{Seq: seq, Receive: TimestampFromNs(time.Now().UnixNano()), TTL: -1, TOS: -1})
			seq++
			_, _ = pc.WriteTo(out[:n], from)
		}
	}()
	return pc.LocalAddr().String()
}

// BenchmarkSendSchedule measures how late probes leave against their
// absolute deadlines (p50, p99 and max schedule error, µs) and the CPU the
// sending thread uses (% of one core), at 50, 1,000 and 10,000 probes/s.
// Each iteration is one run of a few seconds; run it with -benchtime=1x:
//
//	go test -run=^$ -bench=SendSchedule -benchtime=1x ./internal/stamp/
func BenchmarkSendSchedule(b *testing.B) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		count    int
	}{
		{"20ms", 20 * time.Millisecond, 500},
		{"1ms", time.Millisecond, 5000},
		{"100us", 100 * time.Microsecond, 20000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			addr := echoReflector(b)
			var lateUs []float64
			var cpu, wall time.Duration
			for b.Loop() {
				conn, err := Dial("udp4", addr)
				if err != nil {
					b.Fatal(err)
				}
				run, err := RunSender(context.Background(), SenderConfig{
					Conn: conn, Clock: NewClock(), Interval: tc.interval, Count: tc.count,
					PacketBytes: BaseLen, NoCoS: true, Timeout: 200 * time.Millisecond, NoReplyAbort: -1,
				})
				conn.Close()
				if err != nil {
					b.Fatal(err)
				}
				if run.Err != nil {
					b.Fatal(run.Err)
				}
				for _, s := range run.Sends[:run.Sent] {
					lateUs = append(lateUs, float64(s.T1-s.Deadline)/1e3)
				}
				cpu += run.SenderCPU
				wall += run.SendTime
			}
			slices.Sort(lateUs)
			q := func(p float64) float64 { return lateUs[min(len(lateUs)-1, int(p*float64(len(lateUs))))] }
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(lateUs[len(lateUs)-1], "max-µs")
			b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%")
			b.ReportMetric(0, "ns/op")
		})
	}
}
