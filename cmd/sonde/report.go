//go:build !monitoronly

package main

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/report"
)

// reportHelp is the long help of `sonde report`; schemas, the kinds it
// reads, come from internal/report.
var reportHelp = func(schemas string) string {
	return `Read results saved with --json and render them again: the saved JSON is the
source of truth, so one file gives the same text the run printed, and --html
the same report. The kind of result comes from the file's "schema" field
(` + schemas + `).

Two or more files of the same kind are compared: one table of the headline
figures (goodput, RTT, added latency, loss, jitter...) with a column per file
(#1, #2... in the order given) and the difference of each to the first, e.g.
before and after a change of router, or two ISPs.

--csv writes the headline figures as CSV (figure, unit, one column per file,
plain numbers in the unit). --html and --csv take a file or - for stdout;
with -, the text goes nowhere. A file that cannot be read, is larger than
256 MiB or has an unknown schema is a usage error (exit 2).`
}(strings.Join(report.Schemas(), ", "))

// newReportCmd is `sonde report`: the saved JSON of a run is the source of
// truth, rendered again or set beside others (internal/report does both).
func newReportCmd() *cobra.Command {
	var out report.Outputs
	cmd := &cobra.Command{
		Use:   "report FILE...",
		Short: "Re-render saved results (--json of test, udp, analyze, mbm, monitor report, fleet report) or compare them side by side",
		Long:  reportHelp,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), &out, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&out.HTML, "html", "", "write the HTML report (of one result, or the comparison of several) to `FILE`, - for stdout (no text then)")
	f.StringVar(&out.CSV, "csv", "", "write the headline figures as CSV to `FILE`, - for stdout (no text then)")
	return cmd
}

// runReport renders the saved results in paths: the text on stdout unless
// an output goes there, HTML and CSV where out names.
func runReport(stdout, stderr io.Writer, out *report.Outputs, paths []string) error {
	if err := usageErr(out.Check()); err != nil {
		return err
	}
	saved, err := report.LoadSame(paths)
	if err != nil {
		return usageErr(err)
	}
	return out.Write(stdout, stderr, report.RerenderForms(saved))
}
