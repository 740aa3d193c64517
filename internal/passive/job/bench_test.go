package job

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// BenchmarkJobFile profiles what sonde analyze does on a capture named by
// SONDE_BENCH_PCAP (bench/analyze.sh makes one): the analysis with its
// spill and the text summary of every connection (discarded), with
// SONDE_BENCH_WORKERS workers (default 1); skipped without it.
//
//	SONDE_BENCH_PCAP=/var/tmp/sonde-bench/analyze-v2-10000000-seed1.pcap GOMAXPROCS=1 go test -run X -bench JobFile -benchtime 1x -cpuprofile cpu.out ./internal/passive/job/
func BenchmarkJobFile(b *testing.B) {
	path := os.Getenv("SONDE_BENCH_PCAP")
	if path == "" {
		b.Skip("set SONDE_BENCH_PCAP to a capture file")
	}
	workers, _ := strconv.Atoi(os.Getenv("SONDE_BENCH_WORKERS"))
	for range b.N {
		var stdout, stderr bytes.Buffer
		j := &Job{Out: Outputs{Stdout: &stdout, Stderr: &stderr}}
		j.Config.Interface, j.Config.Workers = -1, max(workers, 1)
		res, err := j.Files([]string{path})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(res.Packets)/b.Elapsed().Seconds()*float64(b.N), "pkt/s")
	}
}
