//go:build !monitoronly

package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/capfilter"
	"github.com/sonde-project/sonde/internal/capture"
	"github.com/sonde-project/sonde/internal/units"
)

// newCaptureCmd captures live with AF_PACKET sockets (no libpcap),
// optionally writes a nanosecond raw-IP pcap, and analyses as it goes
// (internal/capture reads, internal/passive/job analyses).
func newCaptureCmd() *cobra.Command {
	var af analyzeFlags
	var spec capture.Spec
	var count, ring string
	cmd := &cobra.Command{
		Use:   "capture -i IF [-w FILE] [--filter FILTER]",
		Short: "Capture live (AF_PACKET, no libpcap) and analyse as it goes",
		Long: `Capture IP packets on an interface with an AF_PACKET socket (cooked mode,
kernel timestamps), write them to a pcap file (-w, raw IP, nanosecond
timestamps) and analyse them like 'sonde analyze'. Stops after --duration,
--count packets, or Ctrl-C. --filter is a capture filter in tcpdump's
language on IP packets, compiled to BPF and run in the kernel:
  sonde capture -i eth0 -t 10s --filter "tcp port 5201 and host 198.18.1.2"
(as with tcpdump, the filter may also be given as the words after the
flags). Each worker (--workers) reads its own socket, whose TPACKET_V3 ring
(--ring) the kernel fills in blocks; with several, the sockets form one
PACKET_FANOUT group that sends both directions of a connection to the same
worker. The summary gives the packets the kernel dropped because sonde fell
behind (always, 0 included; a note on stderr when there were any), the
times the ring filled up, and the packets still in the rings at the stop.
With -w, one worker unless --workers says otherwise: several write the file
in the order they take the packets, in time order per connection but not
across connections.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if spec.Interface == "" {
				return usagef("capture needs -i INTERFACE")
			}
			var cerr, rerr error
			if spec.Count, cerr = units.ParseCountLimit(count, 1<<40); cerr != nil {
				cerr = fmt.Errorf("--count: %w", cerr)
			}
			spec.RingBytes, rerr = capture.ParseRing(ring)
			err := errors.Join(checkDuration("--duration", spec.Duration, 0, 365*24*time.Hour), cerr, rerr, checkOutput("--write", spec.Write))
			if err != nil {
				return usageErr(err)
			}
			j, err := af.job(cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err = cmp.Or(err, checkCount("--workers", af.workers, 0, capture.MaxWorkers)); err != nil {
				return err
			}
			if spec.Write != "" && !cmd.Flags().Changed("workers") {
				j.Config.Workers = 1 // a file in time order, as tcpdump writes it
			}
			expr := af.filter
			if len(args) > 0 {
				if expr != "" {
					return usagef("capture: give the filter once: --filter or the words after the flags, not both")
				}
				expr = strings.Join(args, " ")
			}
			if spec.Filter, err = capfilter.Compile(expr); err != nil {
				return usageErr(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			spec.Log = cmd.ErrOrStderr()
			res, err := j.Live(ctx, spec)
			return analyzeStatus(res, err)
		},
	}
	af.register(cmd, true)
	f := cmd.Flags()
	f.StringVarP(&spec.Interface, "interface", "i", "", "network interface to capture on (required)")
	f.StringVarP(&spec.Write, "write", "w", "", "also write the packets to this pcap `FILE` (raw IP, nanosecond timestamps)")
	f.DurationVarP(&spec.Duration, "duration", "t", 0, "stop after this long (0: until Ctrl-C)")
	f.StringVarP(&count, "count", "c", units.Off, "stop after `N` packets (off or 0: no limit)")
	f.StringVar(&ring, "ring", "32MiB", "each worker's TPACKET_V3 ring `SIZE` (128KiB to 1GiB, kernel memory): packets wait there while sonde is busy; a full ring drops")
	// The old name, for scripts written before the rename.
	f.StringVar(&spec.Interface, "interface-name", "", "")
	_ = f.MarkDeprecated("interface-name", "use -i/--interface")
	return cmd
}
