package passive

import (
	"os"
	"strconv"
	"testing"
)

// BenchmarkAnalyzeFile profiles the analyser on a capture named by
// SONDE_BENCH_PCAP (bench/analyze.sh makes one), with
// SONDE_BENCH_WORKERS workers (default 1); skipped without it.
//
//	SONDE_BENCH_PCAP=/var/tmp/sonde-bench/1m.pcap go test -run X -bench AnalyzeFile -cpuprofile cpu.out ./internal/passive/
func BenchmarkAnalyzeFile(b *testing.B) {
	path := os.Getenv("SONDE_BENCH_PCAP")
	if path == "" {
		b.Skip("set SONDE_BENCH_PCAP to a capture file")
	}
	workers, _ := strconv.Atoi(os.Getenv("SONDE_BENCH_WORKERS"))
	for range b.N {
		a := New(Config{Interface: -1, Workers: workers})
		cf, err := a.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		a.Finish(nil)
		b.ReportMetric(float64(cf.Packets)/b.Elapsed().Seconds()*float64(b.N), "pkt/s")
	}
}
