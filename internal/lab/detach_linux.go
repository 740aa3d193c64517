package lab

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Detach starts `self args…` (a `sonde lab up` without --detach, with the
// flag that makes it write to its DetachedLog) in its own session (no
// parent-death signal: it outlives this process) with output to a log
// file, and returns the lab's state and the log's path once its state file
// shows the lab is up (within 60 s). A child that ends first is an error
// with its log.
func Detach(stateDir, self string, args []string) (State, string, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return State{}, "", fmt.Errorf("lab up: %w", err)
	}
	// The log gets its final name, the child's pid, once there is a
	// child: until then lab clean must not take it for a dead lab's.
	logf, err := NewDetachedLog(stateDir)
	if err != nil {
		return State{}, "", fmt.Errorf("lab up: %w", err)
	}
	defer logf.Close()
	child := exec.Command(self, args...)
	child.Stdout, child.Stderr = logf, logf
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := child.Start(); err != nil {
		os.Remove(logf.Name())
		return State{}, "", fmt.Errorf("lab up: %w", err)
	}
	logPath := DetachedLog(stateDir, child.Process.Pid)
	if err := os.Rename(logf.Name(), logPath); err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		os.Remove(logf.Name())
		return State{}, "", fmt.Errorf("lab up: log: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case err := <-exited:
			// Shown here in full, so the file can go.
			log, _ := os.ReadFile(logPath)
			os.Remove(logPath)
			return State{}, "", fmt.Errorf("lab up: background process ended (%v):\n%s", err, log)
		case <-deadline:
			_ = child.Process.Kill()
			return State{}, "", fmt.Errorf("lab up: lab not up after 60 s (log: %s)", logPath)
		case <-time.After(100 * time.Millisecond):
		}
		states, _ := ListStates(stateDir)
		for _, s := range states {
			if s.PID == child.Process.Pid {
				return s, logPath, nil
			}
		}
	}
}
