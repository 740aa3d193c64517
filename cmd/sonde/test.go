//go:build !monitoronly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/iperf3"
	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/tcptest"
	"github.com/sonde-project/sonde/internal/units"
)

// testFlags are the raw flag values of `sonde test`, validated in build.
type testFlags struct {
	cfg        tcptest.Config
	streams    string
	dscp       string
	classes    string
	linkRate   string
	upLinkRate string
	lab        string
	truthFile  string
	direction  string
	out        report.Outputs
	noProgress bool
}

func newTestCmd() *cobra.Command {
	var tf testFlags
	cmd := &cobra.Command{
		Use:   "test [SERVER]",
		Short: "Run the test suite against a sonde server",
		Long: `Run, in order: baseline RTT on an idle connection, download and upload
load phases (multi-stream) with latency under load and RPM, the
bidirectional phase (download and upload at once) with --direction bidir or
all, QoS classes if asked, then print a summary with the RFC 6349 report of each direction.

SERVER is host[:port] or http(s)://host[:port] (default port 8080). Without
SERVER, sonde starts an embedded server on loopback and says so: that
measures this host's TCP stack, not a network.

SERVER may also be iperf3://host[:port] (default port 5201): any iperf3
server, tested with -P streams and -R (docs/iperf3.md). Its RTTs are
TCP-connect times to its port; it gives no one-way delays and no server
TCP_INFO. A busy iperf3 server is a refusal (exit 4).

Progress goes to stderr; the text summary to stdout, or nowhere when --json
or --html writes to stdout (-). The result is written even when a phase
fails, with the error recorded in it.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return fmt.Errorf("test takes one server address, got %d: %s", len(args), strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				tf.cfg.Server = args[0]
			}
			if tf.lab != "" {
				if err := tf.build(); err != nil {
					return usageErr(err)
				}
				return runLab(cmd.Context(), &tf, cmd.Flags())
			}
			return runTest(cmd.Context(), &tf, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVarP(&tf.cfg.Duration, "duration", "t", 10*time.Second, "length of each load phase")
	f.StringVarP(&tf.streams, "streams", "n", "auto", "streams per direction: a count, or auto (add streams while goodput grows >5% and streams are window- or buffer-limited)")
	f.IntVar(&tf.cfg.MaxStreams, "max-streams", 16, "upper bound for --streams auto")
	f.StringVar(&tf.direction, "direction", "sequential", "load phases to run: sequential (download, then upload), download, upload, bidir (download and upload at once), or all (download, upload, then bidir); both is a deprecated name of sequential")
	f.StringVar(&tf.dscp, "dscp", "", "DSCP for every test socket, number 0-63 or name (ef, af41, cs1...); the server marks its sockets too")
	f.StringVar(&tf.classes, "classes", "", `QoS classes test: one flow per class at the same time, "name:dscp[@port],...", e.g. "ef:46,be:0,cs1:8@8081"`)
	f.StringVar(&tf.linkRate, "link-rate", "", "bottleneck link `RATE` in bit/s for TTR and BDP (RFC 6349), e.g. 1G, 100M, 544k")
	f.StringVar(&tf.upLinkRate, "up-link-rate", "", "upload bottleneck `RATE` when it differs from --link-rate (asymmetric lines)")
	f.StringVar(&tf.lab, "lab", "", "run across an emulated path: build lab profile PROFILE (sonde lab profiles), serve in its server namespace, test from its client namespace, and show the configured ground truth next to each figure; needs root")
	f.IntVar(&tf.cfg.WireOverhead, "wire-overhead", 38, "layer 2 bytes per packet on the link, for the maximum TCP goodput (Ethernet 38, with 802.1Q 42)")
	f.DurationVar(&tf.cfg.ProbeInterval, "probe-interval", 20*time.Millisecond, "interval of latency probes, at most 50ms")
	f.IntVar(&tf.cfg.BaselineSamples, "baseline-samples", 30, "idle RTT samples, at least 20")
	f.BoolVar(&tf.cfg.NoForeign, "no-foreign-probes", false, "do not open new connections during load (disables RPM)")
	f.BoolVar(&tf.cfg.NoUDP, "no-udp-probes", false, "no STAMP probes beside the TCP probes (they split delay under load by direction)")
	f.BoolVar(&tf.cfg.LossBased, "loss-based", false, "load streams under a loss-based congestion control (cubic, else reno) at both ends instead of the hosts' default: a drop-tail bottleneck's buffer then fills, the responsiveness draft's working conditions, so RPM compares with sonde rpm's (docs/interop.md)")
	f.StringVar(&tf.cfg.Token, "token", "", "bearer token for a private server")
	f.BoolVarP(&tf.cfg.Insecure, "insecure", "k", false, "accept any TLS certificate (self-signed test servers)")
	registerOutputs(cmd, &tf.out, "the result (docs/result-schema.md)", false)
	f.BoolVar(&tf.noProgress, "no-progress", false, "no live progress on stderr")
	f.StringVar(&tf.truthFile, "ground-truth", "", "JSON file with the path's configured properties (set by --lab)")
	_ = f.MarkHidden("ground-truth")
	return cmd
}

// build checks the flags and fills the client configuration
// (tcptest.Settings).
func (tf *testFlags) build() error {
	c := &tf.cfg
	deprecated, err := tcptest.Settings{Streams: tf.streams, DSCP: tf.dscp, Classes: tf.classes,
		LinkRate: tf.linkRate, UpLinkRate: tf.upLinkRate, Direction: tf.direction}.Apply(c)
	if deprecated {
		fmt.Fprintln(os.Stderr, "sonde: --direction both is deprecated: use sequential (download, then upload); bidir runs them at once")
	}
	if err != nil {
		return err
	}
	if c.Truth, err = lab.ReadTruthFile(tf.truthFile); err != nil {
		return err
	}
	// Outputs are checked before the run, so a bad path costs no
	// measurement.
	if err := usageErr(tf.out.Check()); err != nil {
		return err
	}
	c.Software = "sonde/" + version
	return c.Validate()
}

func runTest(ctx context.Context, tf *testFlags, stdout io.Writer) error {
	if err := tf.build(); err != nil {
		return usageErr(err)
	}
	if strings.HasPrefix(tf.cfg.Server, "iperf3://") {
		return runIperf3Test(ctx, tf, stdout)
	}
	if tf.cfg.Server == "" {
		url, stop, err := useEmbedded(ctx, "server", "the host's TCP stack")
		if err != nil {
			return err
		}
		defer stop()
		tf.cfg.Server, tf.cfg.Embedded = url, true
	}
	if !tf.noProgress && isTerminal(os.Stderr) {
		tf.cfg.Progress = progressLine(os.Stderr)
	}
	res, runErr := tcptest.Run(ctx, tf.cfg)
	if tf.cfg.Progress != nil {
		fmt.Fprint(os.Stderr, "\r\033[K")
	}
	if res == nil {
		return runErr
	}
	if res.Baseline != nil {
		runErr = measuredErr(runErr)
	}
	outErr := writeOutputs(res, tf, stdout)
	return errors.Join(runErr, outErr)
}

// writeOutputs writes every requested form of the result. If an output
// cannot be written, the text summary is written even with --quiet (to
// stderr when stdout has a machine output), so the measurement is not lost.
func writeOutputs(res *model.Result, tf *testFlags, stdout io.Writer) error {
	return tf.out.Write(stdout, os.Stderr, report.FormsOf(res))
}

// startEmbedded runs a server on loopback for this process (sonde test
// and sonde udp without SERVER).
func startEmbedded(ctx context.Context) (addr string, stop func(), err error) {
	return server.StartEmbedded(ctx, "sonde/"+version+" (embedded)")
}

// useEmbedded starts the embedded server and says so on stderr: what is
// tested there, and what that measures (not a network).
func useEmbedded(ctx context.Context, what, measures string) (url string, stop func(), err error) {
	addr, stop, err := startEmbedded(ctx)
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintf(os.Stderr, "sonde: no server given: testing against an embedded %s on %s (loopback: this measures %s, not a network)\n", what, addr, measures)
	return "http://" + addr, stop, nil
}

// progressLine redraws one status line: phase, elapsed, rate, RTT.
func progressLine(w io.Writer) func(tcptest.Progress) {
	return func(p tcptest.Progress) {
		rtt := "-"
		if p.RTTMs > 0 {
			rtt = report.FormatMs(p.RTTMs)
		}
		fmt.Fprintf(w, "\r\033[K%-8s %4.1f/%.0fs  %14s  rtt %9s  streams %d",
			p.Phase, p.Elapsed.Seconds(), p.Duration.Seconds(), units.FormatRate(p.RateBps), rtt, p.Streams)
	}
}

// runIperf3Test runs sonde's TCP suite against an iperf3 server
// (docs/iperf3.md) and writes the result like any test's.
func runIperf3Test(ctx context.Context, tf *testFlags, stdout io.Writer) error {
	addr, err := iperf3.ParseURL(tf.cfg.Server)
	if err != nil {
		return usageErr(err)
	}
	if tf.cfg.Bidir {
		return usageErr(fmt.Errorf("--direction %s: the bidirectional phase runs against sonde servers only, not iperf3://", tf.direction))
	}
	res, runErr := iperf3.Suite(ctx, iperf3.SuiteConfig{Addr: addr, Duration: tf.cfg.Duration, Streams: tf.cfg.Streams,
		Download: tf.cfg.Download, Upload: tf.cfg.Upload, Software: "sonde/" + version})
	if res == nil {
		return runErr
	}
	return errors.Join(runErr, writeOutputs(res, tf, stdout))
}
