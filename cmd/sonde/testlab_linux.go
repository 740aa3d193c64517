//go:build linux && !monitoronly

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/sonde-project/sonde/internal/lab"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
)

// labPort is the server's port inside the lab.
const labPort = "8080"

// labRun is a command run across a lab (`sonde test --lab`, `sonde mbm
// --lab`): what differs between the commands is only the lab server's
// flags and the client's arguments.
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

// run builds the lab, starts a server in the server namespace, and re-runs
// this command in the client namespace against it (sockets belong to the
// namespace of the process that makes them), with the lab's ground truth
// passed along (--ground-truth) for the result. Both children get SIGKILL
// as parent-death signal, so that killing this process, even with
// SIGKILL, ends them too: without this process the lab forwards nothing,
// so whatever the client went on to measure would be the dead lab, not the
// profile.
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
	l, err := lab.UpProfile(ctx, p, lab.Options{})
	if err != nil {
		return err
	}
	defer l.Down()
	truth := l.Truth()
	fmt.Fprintf(os.Stderr, "sonde: lab %s up: client %s, server %s\n", truth.Profile, l.ClientAddr(), l.ServerAddr())

	srvCtx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSrv()
	addr := net.JoinHostPort(l.ServerAddr(), labPort)
	srv := l.Command(srvCtx, lab.Server, self, append([]string{"serve", "--addr", addr, "--per-ip-rate", "off"}, r.serveArgs...)...)
	srvDone, err := startAndWait(srv, "sonde: serving", 10*time.Second)
	if err != nil {
		stopSrv()
		<-srvDone
		return fmt.Errorf("lab server: %w", err)
	}
	defer func() { stopSrv(); <-srvDone }()

	truthFile, err := writeTruth(truth)
	if err != nil {
		return err
	}
	defer os.Remove(truthFile)
	args := append(withoutLab(os.Args[1:]), addr, "--ground-truth", truthFile)
	if r.clientArgs != nil {
		args = append(args, r.clientArgs(truth)...)
	}
	child := l.Command(ctx, lab.Client, self, args...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	// On Ctrl-C the child gets the signal from the terminal too; give it
	// time to write what it measured rather than killing it.
	child.Cancel = func() error { return child.Process.Signal(os.Interrupt) }
	child.WaitDelay = 15 * time.Second
	c, err := netns.StartChild(child, syscall.SIGKILL)
	if err != nil {
		return fmt.Errorf("lab client: %w", err)
	}
	if err := c.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			// The child already printed its error line.
			return &exitError{code: ee.ExitCode(), err: errSilent}
		}
		return fmt.Errorf("lab client: %w", err)
	}
	return nil
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

func writeTruth(t model.GroundTruth) (string, error) {
	f, err := os.CreateTemp("", "sonde-truth-*.json")
	if err != nil {
		return "", fmt.Errorf("--lab: %w", err)
	}
	if err := json.NewEncoder(f).Encode(t); err != nil {
		f.Close()
		return "", fmt.Errorf("--lab: %w", err)
	}
	return f.Name(), f.Close()
}

// startAndWait starts cmd, to be killed when this process dies, and waits
// until its stderr shows a line starting with ready; later stderr is
// passed through. done is closed when cmd has exited (and was waited for).
func startAndWait(cmd *exec.Cmd, ready string, timeout time.Duration) (done <-chan struct{}, err error) {
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	c, err := netns.StartChild(cmd, syscall.SIGKILL)
	if err != nil {
		closed := make(chan struct{})
		close(closed)
		return closed, err
	}
	found := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			if !signalled && strings.HasPrefix(line, ready) {
				signalled = true
				found <- nil
				continue
			}
			fmt.Fprintln(os.Stderr, line)
		}
		if !signalled {
			found <- errors.New("exited before it was ready")
		}
	}()
	go func() { <-c.Done(); pw.Close() }()
	select {
	case err := <-found:
		return c.Done(), err
	case <-time.After(timeout):
		return c.Done(), fmt.Errorf("not ready after %v", timeout)
	}
}
