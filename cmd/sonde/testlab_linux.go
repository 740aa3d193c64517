//go:build linux && !monitoronly

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
)

// labRun is a command run across a lab (`sonde test --lab`, `sonde mbm
// --lab`, `sonde rpm --lab`: lab.Rerun): what differs between the
// commands is only the lab server's flags and the client's arguments.
type labRun struct {
	// profile is --lab's value, server a SERVER given beside it (refused).
	profile, server string
	// check, if set, checks the command's own flags once --lab's are
	// checked and before a lab is built.
	check func() error
	// serveArgs are flags of the lab's `sonde serve` beyond its address.
	serveArgs []string
	// clientArgs are the flags the client re-run gets beyond this
	// command's own (less --lab), the lab server and --ground-truth.
	clientArgs func(truth model.GroundTruth) []string
}

// run checks the flags (usage errors), then builds the lab and re-runs
// this command in it (lab.Rerun); a client that failed has printed its
// error line, and its exit code is this command's.
func (r labRun) run(ctx context.Context) error {
	if r.server != "" {
		return usagef("--lab runs its own server in the lab: give no SERVER with it")
	}
	// The profile first: a misspelt name is a usage error, root or not.
	p, err := lab.Resolve(r.profile)
	if err != nil {
		return usagef("--lab: %w", err)
	}
	if r.check != nil {
		if err := r.check(); err != nil {
			return err
		}
	}
	err = lab.Rerun{Profile: p, ServeArgs: r.serveArgs, Args: withoutLab(os.Args[1:]),
		ClientArgs: r.clientArgs, Log: os.Stderr}.Run(ctx)
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return &exitError{code: ee.ExitCode(), err: errSilent}
	}
	return err
}

// runLab runs `sonde test --lab PROFILE`.
func runLab(ctx context.Context, tf *testFlags, flags *pflag.FlagSet) error {
	return labRun{profile: tf.lab, server: tf.cfg.Server,
		clientArgs: func(truth model.GroundTruth) []string { return lab.TestClientArgs(truth, flags.Changed) }}.run(ctx)
}

// withoutLab is this command's arguments without --lab and its value.
func withoutLab(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--lab":
			i++ // and its value
		case strings.HasPrefix(a, "--lab="):
		default:
			out = append(out, a)
		}
	}
	return out
}
