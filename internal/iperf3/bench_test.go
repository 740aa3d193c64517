package iperf3

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkReverse runs Debian's iperf3 client with -R -P 4 against the
// server, so that `go test -run '^$' -bench Reverse -benchtime 1x
// -cpuprofile F` profiles the server's sender. It reports the client's
// received rate and the server's CPU per GB received (this process's user
// and system time; the iperf3 client is another process).
// IPERF3_BENCH_SECONDS sets -t (5).
func BenchmarkReverse(b *testing.B) {
	needIperf3(b)
	ts := startServer(b, Options{})
	secs := 5
	if s, err := strconv.Atoi(os.Getenv("IPERF3_BENCH_SECONDS")); err == nil && s > 0 && s <= 60 {
		secs = s
	}
	var bits, gb, cpu float64
	for b.Loop() {
		u0, s0 := cpuTimes()
		res, err := runIperf3(b, ts.port, time.Duration(secs+30)*time.Second, "-R", "-P", "4", "-t", strconv.Itoa(secs))
		if err != nil {
			b.Fatal(err)
		}
		u1, s1 := cpuTimes()
		bits += res.End.SumReceived.BitsPerSecond
		gb += float64(res.End.SumReceived.Bytes) / 1e9
		cpu += (u1 - u0 + s1 - s0).Seconds()
	}
	b.ReportMetric(bits/float64(b.N)/1e9, "Gbit/s")
	b.ReportMetric(cpu/gb, "cpu-s/GB")
}
