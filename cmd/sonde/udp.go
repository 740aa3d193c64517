//go:build !monitoronly

package main

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/udptest"
)

// udpFlags are the raw flag values of `sonde udp`, validated in build.
type udpFlags struct {
	opts    udptest.Options
	dscp    string
	ecn     string
	profile string
	classes string
	out     report.Outputs
}

func newUDPCmd() *cobra.Command {
	var uf udpFlags
	cmd := &cobra.Command{
		Use:   "udp [SERVER]",
		Short: "Measure delay, jitter and loss per direction with STAMP probes",
		Long: `Send isochronous STAMP (RFC 8762) probes to a sonde server's reflector and
report, per direction: one-way delay (measured on a shared clock, else
estimated with its uncertainty), RFC 3550 jitter, IPDV and PDV, loss, late
packets, duplicates, RFC 4737 reordering and RFC 3357 loss patterns; plus
RTT and whether the DSCP/ECN marks arrived unchanged (RFC 8972 CoS TLV).

SERVER is the sonde server's HTTP address, host[:port] or http(s)://host[:port]
(default port 8080); the reflector's UDP port comes from the server. Without
SERVER, sonde starts an embedded server on loopback and says so.

--reflector HOST:PORT tests against any standalone STAMP reflector (RFC 8762)
or TWAMP-Light reflector (RFC 5357, as routers run) instead, e.g. port 862:
there is no control channel, so loss is counted for the round trip only and
one-way delays are estimates; the result says which format the reflector
speaks. Add --no-cos if the reflector rejects RFC 8972 TLVs.

--preset voice sends G.711-like probes (20 ms, 172 bytes, EF) and adds an
E-model MOS estimate. --classes runs one flow per class at the same time.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				uf.opts.Server = args[0]
			}
			return runUDP(cmd.Context(), &uf, cmd.Flags().Changed, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVarP(&uf.opts.Duration, "duration", "t", 10*time.Second, "how long to send probes")
	f.DurationVar(&uf.opts.Interval, "probe-interval", 20*time.Millisecond, "time between probes, at least 100µs (absolute deadlines on the monotonic clock)")
	deprecatedAlias(f, "interval", "probe-interval")
	f.IntVarP(&uf.opts.PacketBytes, "size", "s", 64, "UDP payload of each probe in bytes (52, or 56-1452)")
	f.StringVar(&uf.dscp, "dscp", "0", "DSCP of the probes, 0-63 or a name (ef, af41, cs1...); replies carry it too")
	f.StringVar(&uf.ecn, "ecn", "0", "ECN codepoint of the probes: 0-3 or not-ect, ect1, ect0, ce")
	f.DurationVar(&uf.opts.Timeout, "timeout", udptest.DefaultTimeout, "a probe not answered within this time is lost (later replies count as late)")
	f.StringVar(&uf.profile, "preset", "", "voice: 20 ms G.711-sized EF probes and an E-model MOS estimate (explicit flags win)")
	deprecatedAlias(f, "profile", "preset")
	f.StringVar(&uf.classes, "classes", "", `QoS classes: one flow per class at the same time, "name:dscp[/src=PORT],...", e.g. "ef:46,be:0/src=5004" (src: the flow's local UDP port; @PORT, a server port in sonde test, does not apply: the reflector has one port)`)
	f.BoolVar(&uf.opts.NoCoS, "no-cos", false, "send no Class of Service TLV (for strict RFC 8762 reflectors)")
	f.StringVar(&uf.opts.Reflector, "reflector", "", "a standalone STAMP or TWAMP-Light reflector's UDP address (host:port) to test instead of a sonde server")
	f.StringVar(&uf.opts.Token, "token", "", "bearer token for a private server")
	f.BoolVarP(&uf.opts.Insecure, "insecure", "k", false, "accept any TLS certificate")
	f.StringVar(&uf.out.Raw, "raw", "", "write one JSON line per probe to `FILE`, - for stdout (no text summary then)")
	registerOutputs(cmd, &uf.out, "the result (schema sonde.udp/v1)", false)
	return cmd
}

// build checks the flags and fills the options (udptest.Settings);
// changed tells which flags the user set, so that a preset does not
// override them.
func (uf *udpFlags) build(changed func(string) bool) error {
	o := &uf.opts
	if err := (udptest.Settings{Preset: uf.profile, DSCP: uf.dscp, ECN: uf.ecn, Classes: uf.classes}).Apply(o, changed); err != nil {
		return err
	}
	// Outputs are checked before the run, so a bad path costs no
	// measurement.
	if err := usageErr(uf.out.Check()); err != nil {
		return err
	}
	o.Software = "sonde/" + version
	return o.Validate()
}

func runUDP(ctx context.Context, uf *udpFlags, changed func(string) bool, stdout io.Writer) error {
	if err := uf.build(changed); err != nil {
		return usageErr(err)
	}
	if uf.opts.Server == "" && uf.opts.Reflector == "" {
		url, stop, err := useEmbedded(ctx, "reflector", "the host")
		if err != nil {
			return err
		}
		defer stop()
		uf.opts.Server, uf.opts.Embedded = url, true
	}
	if uf.out.Raw != "" {
		w, closeRaw, err := report.OpenOutput(uf.out.Raw, stdout)
		if err != nil {
			return err
		}
		defer closeRaw()
		uf.opts.Raw = w
	}
	res, runErr := udptest.Run(ctx, uf.opts)
	if res == nil {
		return runErr
	}
	// An output that could not be written: the summary is written even
	// with --quiet, so the measurement is not lost.
	return errors.Join(runErr, uf.out.Write(stdout, os.Stderr, report.FormsOf(res)))
}
