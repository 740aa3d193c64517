//go:build unix

package probe

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/udptest/testreflector"
)

// TestHelperReflector is not a test: the benchmark runs it in a child
// process so that the reflector's CPU is not counted as the prober's.
func TestHelperReflector(t *testing.T) {
	if os.Getenv("PROBE_HELPER_REFLECTOR") != "1" {
		t.Skip("helper process for BenchmarkProber")
	}
	r, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(r.Addr())
	// Ends when the benchmark closes stdin (or after an hour at most).
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 1)
		_, _ = os.Stdin.Read(buf)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Hour):
	}
	r.Close()
}

func cpuNs() int64 {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkProber runs the prober for BENCH_SECONDS (default 20) per
// case against a STAMP reflector in another process and reports the
// scheduling lateness (p50, p99, max) and the process's CPU as a share of
// one core, from getrusage. b.N is ignored: the figure is a rate.
func BenchmarkProber(b *testing.B) {
	secs := 20.0
	if v := os.Getenv("BENCH_SECONDS"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 3600 {
			b.Fatalf("BENCH_SECONDS=%q: want 0-3600", v)
		}
		secs = f
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReflector$")
	cmd.Env = append(os.Environ(), "PROBE_HELPER_REFLECTOR=1")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	addr = addr[:len(addr)-1]
	for _, c := range []struct {
		name    string
		streams int
		rate    float64
	}{{"8x10", 8, 10}, {"1x100", 1, 100}} {
		b.Run(c.name, func(b *testing.B) {
			var sc []StreamConfig
			for range c.streams {
				sc = append(sc, StreamConfig{Kind: model.ProbeSTAMP, Target: addr, Rate: c.rate})
			}
			p, err := New(context.Background(), Config{Streams: sc})
			if err != nil {
				b.Fatal(err)
			}
			var samples []model.ProbeSample
			var batch []model.ProbeSample
			p.Start()
			cpu0, t0 := cpuNs(), time.Now()
			// Drain once a second, as the daemon will.
			for time.Since(t0).Seconds() < secs {
				time.Sleep(time.Second)
				batch = p.Ring().Drain(batch[:0])
				samples = append(samples, batch...)
			}
			cpu, wall := cpuNs()-cpu0, time.Since(t0)
			p.Close()
			var late []int64
			lost := 0
			for _, s := range samples {
				late = append(late, s.LatenessNs)
				if s.Lost {
					lost++
				}
			}
			if len(late) == 0 {
				b.Fatal("no samples")
			}
			slices.Sort(late)
			q := func(f float64) float64 { return float64(late[int(f*float64(len(late)-1))]) / 1e3 }
			pct := 100 * float64(cpu) / float64(wall)
			b.ReportMetric(q(0.5), "late-p50-µs")
			b.ReportMetric(q(0.99), "late-p99-µs")
			b.ReportMetric(float64(late[len(late)-1])/1e3, "late-max-µs")
			b.ReportMetric(pct, "cpu-%")
			b.Logf("%s over %.0f s: %d probes (%d lost), lateness p50 %.1f µs p99 %.1f µs max %.1f µs, CPU %.2f %% of one core",
				c.name, wall.Seconds(), len(samples), lost, q(0.5), q(0.99), float64(late[len(late)-1])/1e3, pct)
		})
	}
}
