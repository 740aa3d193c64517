package netns

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// Child is a process started by StartChild.
type Child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartChild starts cmd so that the kernel sends it sig when this process
// dies, whatever kills it (SIGKILL included): a lab's server or client must
// not outlive the process that owns the lab. The child must be waited for
// with Wait, not cmd.Wait.
//
// The parent-death signal (PR_SET_PDEATHSIG) fires when the thread that
// forked the child ends, not the process (go.dev/issue/27505), and the Go
// runtime ends a thread when a goroutine locked to it returns. So the fork
// happens on a goroutine that locks its thread and keeps it until the
// child has been waited for. It survives execve (of non-set-uid programs),
// so `ip netns exec NS CMD`, which execs CMD, passes it on.
func StartChild(cmd *exec.Cmd, sig syscall.Signal) (*Child, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	c := &Child{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.err = cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return c, nil
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the child has exited and been waited for.
func (c *Child) Done() <-chan struct{} { return c.done }

// Wait waits for the child to exit and returns cmd.Wait's result.
func (c *Child) Wait() error {
	<-c.done
	return c.err
}
