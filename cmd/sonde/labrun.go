//go:build !monitoronly

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"

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
	err = lab.Rerun{Profile: p, ServeArgs: r.serveArgs, Args: os.Args[1:],
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

// runMBMLab runs `sonde mbm --lab PROFILE`. The model's flags and the
// outputs are checked here, before a lab is built; the run's own flags
// (mode, tests, derate…) by the client it re-runs, whose exit code this
// returns.
func runMBMLab(ctx context.Context, args []string, o *mbmFlags, rttSet bool) error {
	// The lab's server is this run's alone, so a public server's UDP
	// limits (200 Mbit/s, 20000 packets/s) must not refuse a target the
	// profile's path can carry.
	r := labRun{profile: o.lab, serveArgs: []string{"--udp-max-bitrate", "10G", "--udp-max-rate", "1000000"}}
	if len(args) > 0 {
		r.server = args[0]
	}
	r.check = func() error {
		if o.plan {
			return usagef("--plan sends nothing: give no --lab with it")
		}
		_, err := o.newPlan(rttSet)
		return err
	}
	return r.run(ctx)
}

// runRPMLab runs `sonde rpm --lab PROFILE`: sonde serve with a self-signed
// certificate in the lab's server namespace, this command in its client
// namespace against it (-k: the certificate was made for this run).
func runRPMLab(ctx context.Context, profile string, args []string) error {
	dir, err := os.MkdirTemp("", "sonde-rpm-lab-")
	if err != nil {
		return fmt.Errorf("--lab: %w", err)
	}
	defer os.RemoveAll(dir)
	r := labRun{profile: profile, serveArgs: []string{"--tls", "self-signed", "--tls-dir", dir},
		clientArgs: func(model.GroundTruth) []string { return []string{"--insecure"} }}
	if len(args) > 0 {
		r.server = args[0]
	}
	return r.run(ctx)
}
