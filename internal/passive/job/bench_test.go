package job

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/sonde-project/sonde/internal/passive"
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

// BenchmarkJobOutput times the end of BenchmarkJobFile's job, which is
// serial: the capture is analysed once, then its outputs (the text
// summary, discarded; SONDE_BENCH_JSON=1: the JSON) are written b.N times
// from the records read back.
func BenchmarkJobOutput(b *testing.B) {
	path := os.Getenv("SONDE_BENCH_PCAP")
	if path == "" {
		b.Skip("set SONDE_BENCH_PCAP to a capture file")
	}
	workers, _ := strconv.Atoi(os.Getenv("SONDE_BENCH_WORKERS"))
	var stderr bytes.Buffer
	j := &Job{Out: Outputs{Stdout: io.Discard, Stderr: &stderr}}
	if os.Getenv("SONDE_BENCH_JSON") != "" {
		j.Out.JSON = "-"
	}
	j.Config.Interface, j.Config.Workers = -1, max(workers, 1)
	j.configure()
	st, err := j.openStreams()
	if err != nil {
		b.Fatal(err)
	}
	a := passive.New(j.Config)
	if _, errs := a.ReadFiles([]string{path}); errors.Join(errs...) != nil {
		b.Fatal(errs)
	}
	res := a.Finish(nil)
	defer a.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := j.finish(st, a, res); err != nil {
			b.Fatal(err)
		}
	}
}
