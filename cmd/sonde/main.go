// Command sonde is a network path measurement suite: `sonde serve` runs the
// measurement server, `sonde test` the native client. Run `sonde help` for
// every command and option.
package main

//go:generate go test -run ^Test(CLIDoc|ManPage)$ -update .
//go:generate go test -tags monitoronly -run ^TestMonitorManPage$ -update .

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/clidoc"
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
		os.Exit(exitCode(err))
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "sonde",
		Short: "Network path measurement: active tests and a browser page (serve), UDP quality, MBM (RFC 8337), passive analysis and capture, monitoring, emulation and labs, fleets",
		Long: `sonde measures a network path between a client and a sonde server:
throughput (multi-stream, both directions), baseline RTT, latency under load
and responsiveness (RPM), and an RFC 6349 report built from TCP_INFO, also
from a browser on the page sonde serve serves, and against iperf3, ndt7, RPM
and LibreSpeed peers; UDP delay, jitter and loss; Model Based Metrics
(RFC 8337, sonde mbm); passive RTT from captures and live traffic (sonde
analyze, sonde capture); long-term monitoring of a link's reliability,
outages and bufferbloat (sonde monitor); emulated paths and labs (sonde
emulate, sonde lab); many monitors and servers into one store (sonde store,
sonde fleet).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	// --version only: -v means nothing anywhere (serve's --verbose has no
	// shorthand), so it cannot be mistaken for one or the other.
	root.Flags().Bool("version", false, "print the version")
	root.AddCommand(sondeCommands()...)
	// cobra lists every command below (Available Commands), from the
	// command tree itself.
	root.Long += "\n\n" + clidoc.ExitHelp(exitCodes)
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
