package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/clidoc"
	"github.com/sonde-project/sonde/internal/report"
	"github.com/sonde-project/sonde/internal/units"
)

// Exit codes of every command. exitCodes documents them, in `sonde
// --help` and docs/cli.md; exitCode picks one for an error.
const (
	exitFailure = 1 // a measurement that ran and failed (network, server, I/O); what was measured is still reported
	exitUsage   = 2 // bad flags or arguments, or an output path that cannot be written: nothing was measured
	exitDamaged = 3 // a capture is damaged; what could be read was analysed and reported
	exitRefused = 4 // the server refused the test (busy, token, limit): nothing was measured
	exitVerdict = 5 // a verdict FAIL (sonde mbm, sonde mbm compose)
)

// exitCodes is the documentation of the exit codes, one line each.
var exitCodes = []clidoc.ExitCode{
	{Code: 0, Text: "success"},
	{Code: exitFailure, Text: "a measurement ran and failed (network, server, I/O); what was measured is still reported"},
	{Code: exitUsage, Text: "usage: a bad flag or argument, or an output file that cannot be written; found before anything is measured"},
	{Code: exitDamaged, Text: "a capture is damaged (sonde analyze, capture): what could be read was analysed and reported"},
	{Code: exitRefused, Text: "the server refused the test (busy, bad token, a limit): nothing was measured"},
	{Code: exitVerdict, Text: "a verdict FAIL (sonde mbm: a test FAILed; sonde mbm compose: the path fails its loss budget)"},
}

// exitCode is the exit status for err, the error a command returned.
func exitCode(err error) int {
	var ee *exitError
	var refused *apiclient.RefusedError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case isCobraUsage(err):
		return exitUsage
	case errors.As(err, &refused):
		return exitRefused
	}
	return exitFailure
}

// measuredErr is the error of a run that measured something: a refusal
// within it (a later phase or test refused) does not make it a refused run,
// whose status (4) says nothing was measured; it exits 1, its figures
// reported.
func measuredErr(err error) error {
	var refused *apiclient.RefusedError
	var ee *exitError
	if err == nil || !errors.As(err, &refused) || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitFailure, err: err}
}

// usageErr marks err as a usage error: one line on stderr and exit 2.
func usageErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitUsage, err: err}
}

func usagef(format string, a ...any) error { return usageErr(fmt.Errorf(format, a...)) }

// checkOutput and checkOutputDir check an output flag's path before
// anything is measured (report.CheckOutput): a usage error.
func checkOutput(flag, path string) error { return usageErr(report.CheckOutput(flag, path)) }

func checkOutputDir(flag, dir string) error { return usageErr(report.CheckOutputDir(flag, dir)) }

// checkDuration and checkCount bound a flag (units.CheckDuration,
// units.CheckCount): a usage error.
func checkDuration(flag string, d, lo, hi time.Duration) error {
	return usageErr(units.CheckDuration(flag, d, lo, hi))
}

func checkCount(flag string, n, lo, hi int) error { return usageErr(units.CheckCount(flag, n, lo, hi)) }

// usageArgs makes argument-count errors of cmd and its subcommands usage
// errors (exit 2), like flag errors.
func usageArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error { return usageErr(args(c, a)) }
		}
		usageArgs(c)
	}
}

// isCobraUsage tells cobra's own usage errors (unknown command) apart.
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag")
}

// registerOutputs adds the output flags of o (report.Outputs, the one
// writer); what names the result's form for the help (e.g. "the result
// (docs/result-schema.md)").
func registerOutputs(cmd *cobra.Command, o *report.Outputs, what string, withCSV bool) {
	f := cmd.Flags()
	f.StringVar(&o.JSON, "json", "", "write "+what+" as JSON to `FILE`, - for stdout (no text summary then)")
	f.StringVar(&o.HTML, "html", "", "write a self-contained HTML report to `FILE`, - for stdout (no text summary then)")
	if withCSV {
		f.StringVar(&o.CSV, "csv", "", "write every RTT sample as CSV to `FILE`, - for stdout (no text summary then)")
	}
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no text summary on stdout (with --json, --html or --csv)")
}

// errSilent marks an error already reported to the user.
var errSilent = errors.New("")

// deprecatedAlias makes old a spelling of the flag name in fs, kept for
// one release: it sets the same value, is hidden from the help, and
// cobra prints "Flag --old has been deprecated, use --name instead" when
// it is given. One flag name has one meaning across commands.
func deprecatedAlias(fs *pflag.FlagSet, old, name string) {
	f := fs.Lookup(name)
	fs.Var(f.Value, old, f.Usage)
	_ = fs.MarkDeprecated(old, "use --"+name+" instead")
}
