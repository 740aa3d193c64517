package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes of every command (documented in `sonde --help`).
const (
	exitFailure = 1 // the run failed (network, server, I/O)
	exitUsage   = 2 // bad flags or arguments, or an output path that cannot be written: nothing was measured
	exitDamaged = 3 // sonde analyze: a capture is damaged; what could be read was analysed and reported
)

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
		if lo == 0 {
			return usagef("%s: want 0 to %v, got %v", flag, hi, d)
		}
		return usagef("%s: want %v to %v, got %v", flag, lo, hi, d)
	}
	return nil
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

// errSilent marks an error already reported to the user.
var errSilent = errors.New("")
