//go:build linux && !monitoronly

package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
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
	if os.Geteuid() != 0 {
		return errors.New("--lab needs root: building namespaces and TUN devices takes CAP_NET_ADMIN")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--lab: find this program: %w", err)
	}
	err = lab.Rerun{Profile: p, Self: self, ServeArgs: r.serveArgs, Args: withoutLab(os.Args[1:]),
		ClientArgs: r.clientArgs, Log: os.Stderr}.Run(ctx)
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return &exitError{code: ee.ExitCode(), err: errSilent}
	}
	return err
}

// runLab runs `sonde test --lab PROFILE`.
func runLab(ctx context.Context, tf *testFlags, flags *pflag.FlagSet) error {
	return labRun{profile: tf.lab, server: tf.cfg.Server,
		clientArgs: func(truth model.GroundTruth) []string { return testLabArgs(truth, flags) }}.run(ctx)
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

// testLabArgs are the test client's further arguments in the lab: the
// lab's link rates and IP-level overhead unless given.
func testLabArgs(truth model.GroundTruth, flags *pflag.FlagSet) []string {
	var out []string
	if !flags.Changed("link-rate") && isRate(truth.DownRateBps) {
		out = append(out, "--link-rate", strconv.FormatFloat(truth.DownRateBps, 'f', -1, 64))
		if !flags.Changed("up-link-rate") && isRate(truth.UpRateBps) {
			out = append(out, "--up-link-rate", strconv.FormatFloat(truth.UpRateBps, 'f', -1, 64))
		}
	}
	if !flags.Changed("wire-overhead") {
		out = append(out, "--wire-overhead", "0") // the emulator serialises IP packets
	}
	return out
}

func isRate(v float64) bool { return v > 0 && !math.IsInf(v, 0) }
