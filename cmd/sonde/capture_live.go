//go:build !monitoronly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/capture"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/passive"
	"github.com/sonde-project/sonde/internal/pcap"
	"github.com/sonde-project/sonde/internal/units"
)

// liveCapture is what sonde capture captures.
type liveCapture struct {
	ifname string
	filter *capfilter.Filter
	out    string // -w, "" for none
	count  int64  // stop after this many IP packets, 0: no limit
	ring   int    // bytes per socket
}

// captureLive reads the capture's sockets, one goroutine per worker of lv
// feeding that worker's analyser, until ctx ends or c.count packets were
// analysed, and returns the capture's description. Only IP packets are
// analysed.
func captureLive(ctx context.Context, msg io.Writer, c liveCapture, lv *passive.Live) (*model.LiveCapture, error) {
	g, err := capture.Open(c.ifname, capture.Options{Filter: c.filter, Workers: lv.Workers(), RingBytes: c.ring})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	srcs := g.Sources()
	how := fmt.Sprintf("%d worker(s), a %s ring each", len(srcs), units.FormatBytes(float64(g.RingBytes())))
	if c.filter != nil {
		fmt.Fprintf(msg, "sonde: capturing on %s, filter %q (%s)\n", c.ifname, c.filter, how)
	} else {
		fmt.Fprintf(msg, "sonde: capturing on %s (%s)\n", c.ifname, how)
	}
	live := &model.LiveCapture{Interface: c.ifname, Workers: len(srcs), RingBytes: int64(g.RingBytes())}
	var w *pcap.Writer
	var wmu sync.Mutex // the workers share the file
	if c.out != "" {
		fo, err := os.Create(c.out)
		if err != nil {
			return live, fmt.Errorf("capture: %w", err)
		}
		defer fo.Close()
		if w, err = pcap.NewWriter(fo, pcap.LinkRaw, 262144); err != nil {
			return live, fmt.Errorf("capture: %s: %w", c.out, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var seen atomic.Int64
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		a := lv.Worker(i)
		wg.Go(func() {
			var p capture.Packet
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
				if c.count > 0 && n > c.count {
					return
				}
				a.Packet(p.TimeNs, p.Data)
				if w != nil {
					wmu.Lock()
					err := w.Write(p.TimeNs, p.Data, p.Length)
					wmu.Unlock()
					if err != nil {
						errs[i] = fmt.Errorf("capture: %s: %w", c.out, err)
						cancel()
						return
					}
				}
				if n == c.count {
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	err = errors.Join(errs...)
	if w != nil {
		if ferr := w.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("capture: %s: %w", c.out, ferr)
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
