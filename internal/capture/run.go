package capture

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
	"github.com/sonde-project/sonde/internal/units"
)

// Sink takes one worker's IP packets (a passive.Analyzer, fed by that
// worker's goroutine only).
type Sink interface {
	Packet(t int64, ip []byte)
}

// Spec is what Run captures (sonde capture's flags).
type Spec struct {
	Interface string
	Options
	// Write also writes the packets to this pcap file (raw IP,
	// nanosecond timestamps); "" for none. Several workers write it in
	// the order they take the packets.
	Write string
	// Count stops the capture after this many IP packets (0: no limit),
	// Duration after this long (0: no limit).
	Count    int64
	Duration time.Duration
	// Log receives the line that says how the capture runs (nil: none).
	Log io.Writer
}

// Run captures until ctx ends, spec.Count packets were taken or a socket
// fails: one goroutine per worker reads its socket and gives the IP
// packets to sink(worker). It returns what the capture was, with the
// kernel's counts, even when it also returns an error; nil when no
// socket opened.
func Run(ctx context.Context, spec Spec, sink func(worker int) Sink) (*model.LiveCapture, error) {
	g, err := Open(spec.Interface, spec.Options)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	srcs := g.Sources()
	if spec.Log != nil {
		how := fmt.Sprintf("%d worker(s), a %s ring each", len(srcs), units.FormatBytes(float64(g.RingBytes())))
		if spec.Filter != nil {
			fmt.Fprintf(spec.Log, "sonde: capturing on %s, filter %q (%s)\n", spec.Interface, spec.Filter, how)
		} else {
			fmt.Fprintf(spec.Log, "sonde: capturing on %s (%s)\n", spec.Interface, how)
		}
	}
	live := &model.LiveCapture{Interface: spec.Interface, Workers: len(srcs), RingBytes: int64(g.RingBytes())}
	var w *pcap.Writer
	if spec.Write != "" {
		fo, err := os.Create(spec.Write)
		if err != nil {
			return live, fmt.Errorf("capture: %w", err)
		}
		defer fo.Close()
		if w, err = pcap.NewWriter(fo, pcap.LinkRaw, 262144); err != nil {
			return live, fmt.Errorf("capture: %s: %w", spec.Write, err)
		}
	}
	err = feed(ctx, spec, srcs, sink, w)
	if w != nil {
		if ferr := w.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("capture: %s: %w", spec.Write, ferr)
		}
	}
	st, serr := g.Stats()
	live.KernelReceived, live.KernelDropped, live.KernelRingFull = st.Received, st.Dropped, st.Freezes
	if taken := st.Dropped + st.Read; st.Received > taken {
		live.Unread = st.Received - taken
	}
	if st.BadBlocks > 0 {
		err = errors.Join(err, fmt.Errorf("capture: %d malformed ring blocks: their packets from the damage on were not analysed", st.BadBlocks))
	}
	return live, errors.Join(err, serr)
}

// feed runs one goroutine per source until ctx ends, the count is
// reached or one fails; w (nil: none) is shared.
func feed(ctx context.Context, spec Spec, srcs []*Source, sink func(int) Sink, w *pcap.Writer) error {
	if spec.Duration > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, spec.Duration)
		defer stop()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wmu sync.Mutex // the workers share the file
	var seen atomic.Int64
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		a := sink(i)
		wg.Go(func() {
			var p Packet
			for {
				if err := src.Next(ctx, &p); err != nil {
					if ctx.Err() == nil {
						errs[i] = err
						cancel()
					}
					return
				}
				if pcap.Network(pcap.LinkRaw, p.Data) == nil {
					continue
				}
				n := seen.Add(1)
				if spec.Count > 0 && n > spec.Count {
					return
				}
				a.Packet(p.TimeNs, p.Data)
				if w != nil {
					wmu.Lock()
					err := w.Write(p.TimeNs, p.Data, p.Length)
					wmu.Unlock()
					if err != nil {
						errs[i] = fmt.Errorf("capture: %s: %w", spec.Write, err)
						cancel()
						return
					}
				}
				if n == spec.Count {
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ParseRing reads a ring size (sonde capture --ring: 32MiB, 1GiB) and
// bounds it to MinRingBytes-MaxRingBytes.
func ParseRing(s string) (int, error) {
	n, err := units.ParseBytes(s)
	if err == nil && (n < MinRingBytes || n > MaxRingBytes) {
		err = fmt.Errorf("want %d KiB to %d MiB, got %s", MinRingBytes>>10, MaxRingBytes>>20, s)
	}
	if err != nil {
		return 0, fmt.Errorf("--ring: %w", err)
	}
	return int(n), nil
}
