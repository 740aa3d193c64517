package lab

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procState is what /proc says of a lab's owner process.
type procState int

const (
	// procGone: no such process, a zombie (it runs nothing and has
	// released its files), or the pid now names another process.
	procGone procState = iota
	// procDying: killed (SIGKILL pending) or exiting, not yet gone.
	procDying
	// procRunning: anything else.
	procRunning
)

func (p procState) String() string {
	switch p {
	case procGone:
		return "gone"
	case procDying:
		return "exiting"
	}
	return "running"
}

// pfExiting is PF_EXITING in /proc/PID/stat's flags (include/linux/sched.h).
const pfExiting = 0x4

// sigkillBit is SIGKILL's bit in /proc/PID/status's pending-signal masks.
const sigkillBit = 1 << (9 - 1)

// procStat returns the fields of /proc/PID/stat after the command name:
// [0] is the state, [6] the flags, [19] the start time.
func procStat(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d", pid)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	// The command name may hold spaces and parentheses: it ends at the
	// last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f, nil
}

// procStart is the process's start time (clock ticks since boot), which
// tells it from a later process that got the same pid.
func procStart(pid int) (uint64, error) {
	f, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// procStatus reports whether pid, started at start (0: unknown), still
// runs. A zombie is gone: nobody may ever reap it (the reaper of an
// orphan is whatever runs as pid 1), and it holds nothing.
func procStatus(pid int, start uint64) procState {
	f, err := procStat(pid)
	if err != nil {
		return procGone
	}
	if start != 0 && f[19] != strconv.FormatUint(start, 10) {
		return procGone
	}
	switch f[0] {
	case "Z", "X", "x":
		return procGone
	}
	if flags, err := strconv.ParseUint(f[6], 10, 64); err == nil && flags&pfExiting != 0 {
		return procDying
	}
	if killPending(pid) {
		return procDying
	}
	return procRunning
}

// killPending reports a SIGKILL queued for the process and not yet acted
// on: right after `kill -9` the process may still look like it runs.
func killPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		if m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && m&sigkillBit != 0 {
			return true
		}
	}
	return false
}

// waitGone polls until the process is gone or timeout passes, and returns
// its last state.
func waitGone(pid int, start uint64, timeout time.Duration) procState {
	deadline := time.Now().Add(timeout)
	for {
		st := procStatus(pid, start)
		if st == procGone || !time.Now().Before(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
