//go:build !linux && !monitoronly

package main

import (
	"context"
	"fmt"
	"os"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The lab, sonde emulate and sonde test --lab need Linux (network
// namespaces, TUN devices): elsewhere they say so and exit 1.

var errNotSupported = fmt.Errorf("not supported on %s: network namespaces and TUN devices are Linux's", runtime.GOOS)

func notSupportedCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short + " (Linux only)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("sonde %s: %w", use, errNotSupported)
		},
	}
}

func newLabCmd() *cobra.Command {
	return notSupportedCmd("lab", "Build emulated test topologies in network namespaces")
}

func newEmulateCmd() *cobra.Command {
	return notSupportedCmd("emulate", "Emulate a link between two network namespaces")
}

func runLab(context.Context, *testFlags, *pflag.FlagSet) error {
	return fmt.Errorf("sonde test --lab: %w", errNotSupported)
}

// isTerminal: a character device, as a terminal is (TCGETS is Linux's).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
