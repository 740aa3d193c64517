//go:build linux

// Command corelat measures how long a cache line takes to go from one
// core to another and back: two threads, pinned to the two CPUs given,
// hand a counter to each other through one shared word. bench/analyze.sh
// prints it beside the two-worker rate, which depends on it: the workers
// hand packets and buffers across cores, and a virtual machine's two
// vCPUs may sit on cores that share a cache or on cores that do not
// (docs/analyze.md, "Every core").
//
//	corelat [-a 0] [-b 1] [-n 1000000] [-runs 5]
//
// prints "corelat: round trip MEDIAN ns (min MIN, max MAX) between CPU A
// and CPU B". Exit status 2 on bad flags, 1 when a thread cannot be
// pinned.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	fs := flag.NewFlagSet("corelat", flag.ContinueOnError)
	a := fs.Int("a", 0, "the first CPU")
	b := fs.Int("b", 1, "the second CPU")
	n := fs.Int("n", 1_000_000, "round trips a run (1000 to 100000000)")
	runs := fs.Int("runs", 5, "runs (1 to 100); the median is printed")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *n < 1000 || *n > 100_000_000 || *runs < 1 || *runs > 100 || *a < 0 || *b < 0 || *a >= runtime.NumCPU() || *b >= runtime.NumCPU() || *a == *b {
		fmt.Fprintf(os.Stderr, "corelat: -n 1000..100000000, -runs 1..100, -a and -b two CPUs of 0..%d\n", runtime.NumCPU()-1)
		os.Exit(2)
	}
	var rtts []float64
	for range *runs {
		d, err := pingPong(*a, *b, *n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "corelat:", err)
			os.Exit(1)
		}
		rtts = append(rtts, float64(d.Nanoseconds())/float64(*n))
	}
	slices.Sort(rtts)
	fmt.Printf("corelat: round trip %.0f ns (min %.0f, max %.0f) between CPU %d and CPU %d\n",
		rtts[len(rtts)/2], rtts[0], rtts[len(rtts)-1], *a, *b)
}

// pingPong times n round trips of a counter between a thread on CPU a
// and one on CPU b.
func pingPong(a, b, n int) (time.Duration, error) {
	// The counter has a cache line to itself.
	var line struct {
		_ [64]byte
		v atomic.Int64
		_ [56]byte
	}
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := pin(b); err != nil {
			errs <- err
			return
		}
		errs <- nil
		for i := int64(0); i < int64(n); i++ {
			for line.v.Load() != 2*i+1 {
			}
			line.v.Store(2*i + 2)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := pin(a); err != nil {
		return 0, err
	}
	if err := <-errs; err != nil {
		return 0, err
	}
	start := time.Now()
	for i := int64(0); i < int64(n); i++ {
		line.v.Store(2*i + 1)
		for line.v.Load() != 2*i+2 {
		}
	}
	return time.Since(start), nil
}

func pin(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pinning a thread to CPU %d: %w", cpu, err)
	}
	return nil
}
