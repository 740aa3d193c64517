// Command sonde is a network path measurement suite: `sonde serve` runs the
// measurement server, `sonde test` the native client. Run `sonde help` for
// every command and option.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != errSilent {
			fmt.Fprintln(os.Stderr, "sonde: "+oneLine(err))
		}
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		if isCobraUsage(err) {
			os.Exit(exitUsage)
		}
		os.Exit(exitFailure)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "sonde",
		Short: "Network path measurement: throughput, latency under load, RFC 6349, ndt7",
		Long: `sonde measures a network path between a client and a sonde server:
throughput (multi-stream, both directions), baseline RTT, latency under load
and responsiveness (RPM), and an RFC 6349 report built from TCP_INFO.

  sonde serve                 run a server (HTTP :8080, STAMP reflector UDP :862;
                              ndt7 clients work too)
  sonde test [SERVER]         run the TCP test suite against SERVER, or against
                              an embedded loopback server when none is given
  sonde udp [SERVER]          UDP quality: one-way delay, jitter, loss patterns
  sonde analyze FILE...       passive TCP and QUIC (spin bit) RTT from captures
  sonde lab / sonde emulate   emulated paths with per-packet ground truth

Exit status: 0 success; 1 the run failed (what was measured is still
reported); 2 usage error: a bad flag or argument, or an output file that
cannot be written, found before anything is measured; 3 (sonde analyze) a
capture is damaged: what could be read was analysed and reported.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.AddCommand(newServeCmd(), newTestCmd(), newUDPCmd(), newAnalyzeCmd(), newCaptureCmd(), newLabCmd(), newEmulateCmd())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	usageArgs(root)
	return root
}

// exitError carries a specific exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// oneLine keeps an error to the one line the user reads.
func oneLine(err error) string {
	s := err.Error()
	first, rest, multi := strings.Cut(s, "\n")
	if !multi {
		return s
	}
	// cobra appends its suggestions for a mistyped command on further
	// lines: "Did you mean this?\n\ttest\n".
	if _, sugg, ok := strings.Cut(rest, "Did you mean this?"); ok {
		if names := strings.Fields(sugg); len(names) > 0 {
			return first + "; did you mean " + strings.Join(names, " or ") + "?"
		}
	}
	return first + " (and more)"
}
