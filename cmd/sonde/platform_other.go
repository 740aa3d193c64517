//go:build !linux && !monitoronly

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/lab"
)

// The lab, sonde emulate and sonde test --lab need Linux (network
// namespaces, TUN devices): elsewhere they say so and exit 1.

func notSupportedCmd(use, short string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short + " (Linux only)",
		DisableFlagParsing: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("sonde %s: %w", use, lab.ErrUnsupported)
		},
	}
}

func newLabCmd() *cobra.Command {
	return notSupportedCmd("lab", "Build emulated test topologies in network namespaces")
}

func newEmulateCmd() *cobra.Command {
	return notSupportedCmd("emulate", "Emulate a link between two network namespaces")
}

// isTerminal: a character device, as a terminal is (TCGETS is Linux's).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
