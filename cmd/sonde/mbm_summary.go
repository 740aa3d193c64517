//go:build !monitoronly

package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/report"
)

const mbmSummaryHelp = `Aggregate saved MBM results (sonde mbm --json, schema sonde.mbm/v1) and
compositions (sonde mbm compose --json, sonde.mbm-compose/v1): give files, or
directories whose *.json files are read (not their subdirectories), at most
10,000 files of at most 16 MiB each.

Tests are grouped by test, transport, target, subpath with its p0, and the
pattern's derate and burst size; per group: the runs, their verdicts, the
loss m/n at the verdict (min, quartiles, max) beside p0 and p1, and the
packets the SPRT took to decide. Then the histogram of packets to decide,
and, for compositions made with --path, the composed against the measured
end-to-end loss: its Q-Q pairs (runs over 1000 packets) and their largest
deviation.

--json writes the summary (schema sonde.mbm-summary/v1, which sonde report
renders again), --html a report with SVG charts (box plots of loss with p0
and p1, the histogram, the Q-Q plot), --csv one row per group. A file that
cannot be read or is not an MBM result or composition is a usage error
(exit 2), named in one line; nothing is written then.`

func newMBMSummaryCmd() *cobra.Command {
	var out report.Outputs
	cmd := &cobra.Command{
		Use:   "summary RESULT.json|DIR...",
		Short: "Aggregate saved MBM results and compositions: verdicts, loss and packets to decide by setting, composed vs measured loss",
		Long:  mbmSummaryHelp,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMBMSummary(cmd.OutOrStdout(), cmd.ErrOrStderr(), &out, args)
		},
	}
	registerOutputs(cmd, &out, "the summary (schema sonde.mbm-summary/v1)", false)
	cmd.Flags().StringVar(&out.CSV, "csv", "", "write one row per group as CSV to `FILE`, - for stdout (no text summary then)")
	return cmd
}

func runMBMSummary(stdout, stderr io.Writer, out *report.Outputs, args []string) error {
	if err := usageErr(out.Check()); err != nil {
		return err
	}
	s, err := report.SummarizeMBMFiles(args)
	if err != nil {
		return usageErr(err)
	}
	f := report.FormsOf(&s)
	f.CSV = func(w io.Writer) error { return report.WriteMBMSummaryCSV(w, &s) }
	return out.Write(stdout, stderr, f)
}
