package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Outputs are where a command writes a result: files named by --json,
// --html and --csv (and sonde udp's --raw, monitor report's --csv-series),
// each "" (none), a path or "-" for stdout. At most one goes to stdout, so
// that what a script reads there is one document; the text summary then
// goes nowhere (it would mix with it) unless an output failed, when it goes
// to stderr so that nothing measured is lost.
type Outputs struct {
	JSON, HTML, CSV string
	Raw             string // sonde udp's per-probe lines (--raw)
	Series          string // monitor report's time series (--csv-series)
	Quiet           bool   // no text summary (-q)
}

// Check validates the outputs before anything is measured: one on stdout
// at most, --quiet only with a file output, and every path writable.
func (o Outputs) Check() error {
	stdout := 0
	for _, p := range []string{o.JSON, o.HTML, o.CSV, o.Raw, o.Series} {
		if p == "-" {
			stdout++
		}
	}
	if stdout > 1 {
		return errors.New("only one output (--json, --html, --csv, --raw, --csv-series) can go to stdout (-)")
	}
	if o.Quiet && o.JSON == "" && o.HTML == "" && o.CSV == "" {
		return errors.New("--quiet without --json, --html or --csv would discard the result")
	}
	return errors.Join(CheckOutput("--json", o.JSON), CheckOutput("--html", o.HTML), CheckOutput("--csv", o.CSV),
		CheckOutput("--raw", o.Raw), CheckOutput("--csv-series", o.Series))
}

// ToStdout tells whether a machine output goes to stdout.
func (o Outputs) ToStdout() bool {
	return o.JSON == "-" || o.HTML == "-" || o.CSV == "-" || o.Raw == "-" || o.Series == "-"
}

// TextTo is where the text summary goes: stdout, unless Quiet or a machine
// output is there; if an output failed (failed), stdout or, when a machine
// output is there, stderr. nil: nowhere.
func (o Outputs) TextTo(stdout, stderr io.Writer, failed bool) io.Writer {
	switch {
	case o.ToStdout() && failed:
		return stderr
	case o.ToStdout(), o.Quiet && !failed:
		return nil
	}
	return stdout
}

// Forms are a result's renderings: the value written as JSON, and the
// HTML, CSV, time-series CSV and text writers; nil for a form the command
// has not.
type Forms struct {
	JSON                    any
	HTML, CSV, Series, Text func(io.Writer) error
}

// Write is the one output writer of the commands: every output o names
// (JSON, HTML, CSV, series), then the text summary where TextTo says. An
// output that fails stops neither the others nor the text, which then goes
// where it is seen, so that nothing measured is lost.
func (o Outputs) Write(stdout, stderr io.Writer, f Forms) error {
	var errs []error
	if o.JSON != "" && f.JSON != nil {
		errs = append(errs, WriteOutput("--json", o.JSON, stdout, func(w io.Writer) error { return WriteJSON(w, f.JSON) }))
	}
	if o.HTML != "" && f.HTML != nil {
		errs = append(errs, WriteOutput("--html", o.HTML, stdout, f.HTML))
	}
	if o.CSV != "" && f.CSV != nil {
		errs = append(errs, WriteOutput("--csv", o.CSV, stdout, f.CSV))
	}
	if o.Series != "" && f.Series != nil {
		errs = append(errs, WriteOutput("--csv-series", o.Series, stdout, f.Series))
	}
	if w := o.TextTo(stdout, stderr, errors.Join(errs...) != nil); w != nil && f.Text != nil {
		errs = append(errs, f.Text(w))
	}
	return errors.Join(errs...)
}

// WriteOutput writes one output to name ("-": stdout); flag names it in
// errors.
func WriteOutput(flag, name string, stdout io.Writer, write func(io.Writer) error) error {
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

// OpenOutput opens an output that is written as a run goes (sonde udp's
// --raw): name, or stdout for "-"; close closes the file.
func OpenOutput(name string, stdout io.Writer) (w io.Writer, close func(), err error) {
	if name == "-" {
		return stdout, func() {}, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	return f, func() { f.Close() }, nil
}

// CheckOutput tells, before anything is measured, whether the file an
// output flag names can be written: an existing file must open for
// writing (it is not truncated here), a new one must be creatable (it is
// created and removed again, so a run that fails leaves nothing behind).
// "" and "-" (stdout) are always fine.
func CheckOutput(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s %s: is a directory", flag, path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	f.Close()
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// CheckOutputDir makes dir (an output directory flag) if needed and checks
// that files can be created in it.
func CheckOutputDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	f, err := os.CreateTemp(dir, ".sonde-check-*")
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	f.Close()
	return os.Remove(filepath.Join(dir, filepath.Base(f.Name())))
}
