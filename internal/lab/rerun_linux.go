package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
)

// Run builds the lab, starts the server in the server namespace, and
// re-runs the command in the client namespace against it (sockets belong
// to the namespace of the process that makes them), with the lab's ground
// truth passed along (--ground-truth) for the result. Both children get
// SIGKILL as parent-death signal, so that killing this process, even with
// SIGKILL, ends them too: without this process the lab forwards nothing,
// so whatever the client went on to measure would be the dead lab, not the
// profile. The client shares this process's stdin, stdout and stderr; if
// it exits non-zero, the error wraps its *exec.ExitError (it has already
// printed its error line).
func (r Rerun) Run(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("--lab needs root: building namespaces and TUN devices takes CAP_NET_ADMIN")
	}
	if r.Self == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--lab: find this program: %w", err)
		}
		r.Self = self
	}
	l, err := UpProfile(ctx, r.Profile, Options{})
	if err != nil {
		return err
	}
	defer l.Down()
	truth := l.Truth()
	fmt.Fprintf(r.Log, "sonde: lab %s up: client %s, server %s\n", truth.Profile, l.ClientAddr(), l.ServerAddr())

	srvCtx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSrv()
	addr := net.JoinHostPort(l.ServerAddr(), ServerPort)
	srv := l.Command(srvCtx, Server, r.Self, append([]string{"serve", "--addr", addr, "--per-ip-rate", "off"}, r.ServeArgs...)...)
	srvDone, err := startAndWait(srv, r.Log, "sonde: serving", 10*time.Second)
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
	args := append(WithoutLab(r.Args), addr, "--ground-truth", truthFile)
	if r.ClientArgs != nil {
		args = append(args, r.ClientArgs(truth)...)
	}
	child := l.Command(ctx, Client, r.Self, args...)
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
		return fmt.Errorf("lab client: %w", err)
	}
	return nil
}

// writeTruth writes the ground truth the client reads (ReadTruthFile) to
// a temporary file.
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
// passed to log. done is closed when cmd has exited (and was waited for).
func startAndWait(cmd *exec.Cmd, log io.Writer, ready string, timeout time.Duration) (done <-chan struct{}, err error) {
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
			fmt.Fprintln(log, line)
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
