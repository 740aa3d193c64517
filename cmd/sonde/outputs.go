package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sonde-project/sonde/internal/apiclient"
	"github.com/sonde-project/sonde/internal/clidoc"
	"github.com/sonde-project/sonde/internal/report"
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
	{0, "success"},
	{exitFailure, "a measurement ran and failed (network, server, I/O); what was measured is still reported"},
	{exitUsage, "usage: a bad flag or argument, or an output file that cannot be written; found before anything is measured"},
	{exitDamaged, "a capture is damaged (sonde analyze, capture): what could be read was analysed and reported"},
	{exitRefused, "the server refused the test (busy, bad token, a limit): nothing was measured"},
	{exitVerdict, "a verdict FAIL (sonde mbm: a test FAILed; sonde mbm compose: the path fails its loss budget)"},
}

// exitHelp lists the exit codes for help texts.
func exitHelp() string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", e.Code, e.Text)
	}
	return strings.TrimSuffix(b.String(), "\n")
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

// checkOutput tells, before anything is measured, whether the file an
// output flag names can be written: an existing file must open for
// writing (it is not truncated here), a new one must be creatable (it is
// created and removed again, so a run that fails leaves nothing behind).
// "" and "-" (stdout) are always fine. The error is a usage error.
func checkOutput(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return usagef("%s %s: is a directory", flag, path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return usagef("%s: %w", flag, err)
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return usagef("%s: %w", flag, err)
	}
	f.Close()
	if err := os.Remove(path); err != nil {
		return usagef("%s: %w", flag, err)
	}
	return nil
}

// checkOutputDir makes dir (an output directory flag) if needed and checks
// that files can be created in it.
func checkOutputDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("%s: %w", flag, err)
	}
	f, err := os.CreateTemp(dir, ".sonde-check-*")
	if err != nil {
		return usagef("%s: %w", flag, err)
	}
	f.Close()
	return os.Remove(filepath.Join(dir, filepath.Base(f.Name())))
}

// checkDuration bounds a duration flag to [lo, hi]; lo = 0 allows 0 (off).
func checkDuration(flag string, d, lo, hi time.Duration) error {
	if d < lo || d > hi {
		return usagef("%s: want %s to %s, got %s", flag, shortDuration(lo), shortDuration(hi), shortDuration(d))
	}
	return nil
}

// shortDuration prints a bound as a person writes it: 1h, 24h, 1m30s, 1ms
// (time.Duration's String gives 1h0m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkCount bounds an integer flag to [lo, hi].
func checkCount(flag string, n, lo, hi int) error {
	if n < lo || n > hi {
		return usagef("%s: want %d to %d, got %d", flag, lo, hi, n)
	}
	return nil
}

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

// outputs are a command's result outputs: --json, --html and --csv each
// name a file or "-" for stdout. At most one goes to stdout, so that what a
// script reads there is one document; the text summary then goes nowhere
// (it would mix with it) unless an output failed, when it goes to stderr
// so that nothing measured is lost.
type outputs struct {
	json, html, csv string
	raw             string // sonde udp's per-probe lines (--raw)
	series          string // monitor report's time series (--csv-series)
	quiet           bool
}

// register adds the output flags; what names the result's form for the
// help (e.g. "the result (docs/result-schema.md)").
func (o *outputs) register(cmd *cobra.Command, what string, withCSV bool) {
	f := cmd.Flags()
	f.StringVar(&o.json, "json", "", "write "+what+" as JSON to `FILE`, - for stdout (no text summary then)")
	f.StringVar(&o.html, "html", "", "write a self-contained HTML report to `FILE`, - for stdout (no text summary then)")
	if withCSV {
		f.StringVar(&o.csv, "csv", "", "write every RTT sample as CSV to `FILE`, - for stdout (no text summary then)")
	}
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no text summary on stdout (with --json, --html or --csv)")
}

// check validates the outputs before anything is measured.
func (o *outputs) check() error {
	stdout := 0
	for _, p := range []string{o.json, o.html, o.csv, o.raw, o.series} {
		if p == "-" {
			stdout++
		}
	}
	if stdout > 1 {
		return usagef("only one output (--json, --html, --csv, --raw, --csv-series) can go to stdout (-)")
	}
	if o.quiet && o.json == "" && o.html == "" && o.csv == "" {
		return usagef("--quiet without --json, --html or --csv would discard the result")
	}
	return errors.Join(checkOutput("--json", o.json), checkOutput("--html", o.html), checkOutput("--csv", o.csv), checkOutput("--raw", o.raw), checkOutput("--csv-series", o.series))
}

// toStdout tells whether a machine output goes to stdout.
func (o *outputs) toStdout() bool {
	return o.json == "-" || o.html == "-" || o.csv == "-" || o.raw == "-" || o.series == "-"
}

// textTo is where the text summary goes: stdout, unless --quiet or a
// machine output is there; if an output failed (failed), stdout or, when a
// machine output is there, stderr. nil: nowhere.
func (o *outputs) textTo(stdout, stderr io.Writer, failed bool) io.Writer {
	switch {
	case o.toStdout() && failed:
		return stderr
	case o.toStdout(), o.quiet && !failed:
		return nil
	}
	return stdout
}

// forms are a result's renderings: the value written as JSON, and the
// HTML, CSV, time-series CSV and text writers; nil for a form the command
// has not.
type forms struct {
	json                    any
	html, csv, series, text func(io.Writer) error
}

// write is the one output writer of the commands: every output o names
// (JSON, HTML, CSV), then the text summary where textTo says. An output
// that fails stops neither the others nor the text, which then goes where
// it is seen, so that nothing measured is lost.
func (o *outputs) write(stdout, stderr io.Writer, f forms) error {
	var errs []error
	if o.json != "" && f.json != nil {
		errs = append(errs, writeOutput("--json", o.json, stdout, func(w io.Writer) error { return report.WriteJSON(w, f.json) }))
	}
	if o.html != "" && f.html != nil {
		errs = append(errs, writeOutput("--html", o.html, stdout, f.html))
	}
	if o.csv != "" && f.csv != nil {
		errs = append(errs, writeOutput("--csv", o.csv, stdout, f.csv))
	}
	if o.series != "" && f.series != nil {
		errs = append(errs, writeOutput("--csv-series", o.series, stdout, f.series))
	}
	if w := o.textTo(stdout, stderr, errors.Join(errs...) != nil); w != nil && f.text != nil {
		errs = append(errs, f.text(w))
	}
	return errors.Join(errs...)
}

// write writes one output to name ("-": stdout).
func writeOutput(flag, name string, stdout io.Writer, write func(io.Writer) error) error {
	if name == "-" {
		return write(stdout)
	}
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s %s: %w", flag, name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s %s: %w", flag, name, err)
	}
	return nil
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
