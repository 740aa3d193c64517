//go:build !monitoronly

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/mbm"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/report"
)

// maxSummaryFiles bounds the files one summary reads (each at most
// maxMBMFile bytes, read one at a time).
const maxSummaryFiles = 10000

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
	var out outputs
	cmd := &cobra.Command{
		Use:   "summary RESULT.json|DIR...",
		Short: "Aggregate saved MBM results and compositions: verdicts, loss and packets to decide by setting, composed vs measured loss",
		Long:  mbmSummaryHelp,
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMBMSummary(cmd.OutOrStdout(), cmd.ErrOrStderr(), &out, args)
		},
	}
	out.register(cmd, "the summary (schema sonde.mbm-summary/v1)", false)
	cmd.Flags().StringVar(&out.csv, "csv", "", "write one row per group as CSV to `FILE`, - for stdout (no text summary then)")
	return cmd
}

func runMBMSummary(stdout, stderr io.Writer, out *outputs, args []string) error {
	if err := out.check(); err != nil {
		return err
	}
	files, err := summaryFiles(args)
	if err != nil {
		return usageErr(err)
	}
	sum := report.NewMBMSummarizer()
	for _, f := range files {
		b, err := readBounded(f)
		if err != nil {
			return usageErr(err)
		}
		r, c, err := parseMBMSummaryInput(f, b)
		if err != nil {
			return usageErr(err)
		}
		if r != nil {
			sum.AddResult(r)
		} else {
			sum.AddComposition(c)
		}
	}
	s := sum.Summary()
	var errs []error
	if out.json != "" {
		errs = append(errs, writeOutput("--json", out.json, stdout, func(w io.Writer) error { return writeMBMJSON(w, s) }))
	}
	if out.html != "" {
		errs = append(errs, writeOutput("--html", out.html, stdout, func(w io.Writer) error { return report.WriteMBMSummaryHTML(w, &s) }))
	}
	if out.csv != "" {
		errs = append(errs, writeOutput("--csv", out.csv, stdout, func(w io.Writer) error { return report.WriteMBMSummaryCSV(w, &s) }))
	}
	if w := out.textTo(stdout, stderr, errors.Join(errs...) != nil); w != nil {
		errs = append(errs, report.WriteMBMSummaryText(w, &s))
	}
	return errors.Join(errs...)
}

// summaryFiles lists the files of args: files as given, directories'
// *.json files in name order; at most maxSummaryFiles, counted before any
// is read.
func summaryFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, a)
		} else {
			ents, err := os.ReadDir(a) // sorted by name
			if err != nil {
				return nil, err
			}
			n := 0
			for _, e := range ents {
				if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json") {
					files = append(files, filepath.Join(a, e.Name()))
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("%s: no .json files", a)
			}
		}
		if len(files) > maxSummaryFiles {
			return nil, fmt.Errorf("more than %d files: summarize fewer at once", maxSummaryFiles)
		}
	}
	return files, nil
}

// readBounded reads a saved file of at most maxMBMFile bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMBMFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxMBMFile {
		return nil, fmt.Errorf("%s: larger than %d MiB", path, maxMBMFile>>20)
	}
	return b, nil
}

// Bounds of the strings a summary keys its groups on.
const (
	maxTestIDLen    = 16
	maxTransportLen = 8
	maxSubpathLen   = 64
)

var mbmVerdicts = []string{mbm.Pass.String(), mbm.Fail.String(), mbm.Inconclusive.String(), "ERROR"}

// parseMBMSummaryInput reads one saved file: a result (r) or a
// composition (c), checked field by field; the error names the file in
// one line.
func parseMBMSummaryInput(name string, b []byte) (r *model.MBMResult, c *model.MBMComposition, err error) {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, nil, fmt.Errorf("%s: not a saved MBM result: %s", name, oneLine(err))
	}
	switch head.Schema {
	case model.MBMSchemaVersion:
		var res model.MBMResult
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %s", name, head.Schema, oneLine(err))
		}
		if err := checkMBM(name, res); err != nil {
			return nil, nil, err
		}
		if len(res.Subpath) > maxSubpathLen {
			return nil, nil, fmt.Errorf("%s: subpath longer than %d bytes", name, maxSubpathLen)
		}
		for i, t := range res.Tests {
			switch {
			case len(t.ID) > maxTestIDLen || len(t.Transport) > maxTransportLen:
				return nil, nil, fmt.Errorf("%s: test %d: id or transport too long (%q, %q)", name, i+1, clipText(t.ID), clipText(t.Transport))
			case !slices.Contains(mbmVerdicts, t.Verdict):
				return nil, nil, fmt.Errorf("%s: test %s: verdict %q, want one of %s", name, clipText(t.ID), clipText(t.Verdict), strings.Join(mbmVerdicts, ", "))
			case t.Packets < 0 || t.Marks < 0:
				return nil, nil, fmt.Errorf("%s: test %s: negative counts", name, clipText(t.ID))
			}
			res.Tests[i].Name = clipText(t.Name)
		}
		return &res, nil, nil
	case model.MBMComposeSchemaVersion:
		var comp model.MBMComposition
		if err := json.Unmarshal(b, &comp); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %s", name, head.Schema, oneLine(err))
		}
		if len(comp.Tests) > 64 {
			return nil, nil, fmt.Errorf("%s: %d tests, more than 64", name, len(comp.Tests))
		}
		for _, t := range comp.Tests {
			if len(t.ID) > maxTestIDLen || len(t.SubpathPackets) > mbm.MaxSubpaths {
				return nil, nil, fmt.Errorf("%s: test %q: id longer than %d bytes or more than %d subpaths", name, clipText(t.ID), maxTestIDLen, mbm.MaxSubpaths)
			}
		}
		return nil, &comp, nil
	case "":
		return nil, nil, fmt.Errorf("%s: no \"schema\" field: not a saved MBM result", name)
	}
	return nil, nil, fmt.Errorf("%s: schema %q, want %s or %s", name, clipText(head.Schema), model.MBMSchemaVersion, model.MBMComposeSchemaVersion)
}
