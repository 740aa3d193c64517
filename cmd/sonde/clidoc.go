//go:build !monitoronly

package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/clidoc"
)

// writeCLIDoc and writeManPage write docs/cli.md and docs/sonde.1 from
// the command tree (internal/clidoc): TestCLIDoc and TestManPage fail when
// the committed pages differ, and `go generate ./cmd/sonde` rewrites them.
func writeCLIDoc(w io.Writer, root *cobra.Command) error { return clidoc.Markdown(w, root, exitCodes) }

func writeManPage(w io.Writer, root *cobra.Command) error { return clidoc.Man(w, root, exitCodes) }
