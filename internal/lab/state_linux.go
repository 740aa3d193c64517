//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/netns"
)

// State is a running lab as recorded in its state file, for the sonde
// processes that did not build it (lab exec, lab down, lab clean).
type State struct {
	ID       string      `json:"id"`
	Profile  string      `json:"profile"`
	PID      int         `json:"pid"`       // the process forwarding packets
	PIDStart uint64      `json:"pid_start"` // its start time (/proc/PID/stat), against pid reuse
	Seed     uint64      `json:"seed"`
	Started  time.Time   `json:"started"`
	Nodes    []StateNode `json:"nodes"`
	Client   string      `json:"client_addr"`
	Server   string      `json:"server_addr"`
	// Log is the output of a detached lab (DetachedLog), removed with it.
	Log string `json:"log,omitempty"`

	path string
}

// StateNode is one node of a recorded lab.
type StateNode struct {
	Name      string `json:"name"`
	Namespace string `json:"netns"`
	Addr      string `json:"addr"`
}

// maxStateFile bounds a state file read back (a real one is ~1 KB).
const maxStateFile = 64 << 10

// CleanWait bounds how long clean and down wait for a lab's process to
// exit (after SIGKILL, or SIGTERM on --all) and release its namespaces.
const CleanWait = 5 * time.Second

// DetachedLog is the log file of the detached `lab up` process pid in dir.
func DetachedLog(dir string, pid int) string {
	return filepath.Join(dir, fmt.Sprintf("up-%d.log", pid))
}

// detachedLogPID returns the pid in a DetachedLog name.
func detachedLogPID(name string) (int, bool) {
	s, ok := strings.CutPrefix(filepath.Base(name), "up-")
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, ".log"); !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != s {
		return 0, false
	}
	return pid, true
}

func (l *Lab) writeState() error {
	if err := os.MkdirAll(l.stateDir, 0o755); err != nil {
		return fmt.Errorf("sonde lab: state dir: %w", err)
	}
	start, err := procStart(os.Getpid())
	if err != nil {
		return fmt.Errorf("sonde lab: own start time: %w", err)
	}
	s := State{ID: l.ID, Profile: l.Profile.Name, PID: os.Getpid(), PIDStart: start, Seed: l.Seed, Started: l.Start,
		Client: l.ClientAddr(), Server: l.ServerAddr(), Log: l.log}
	for _, nd := range l.nodes {
		s.Nodes = append(s.Nodes, StateNode{Name: nd.name, Namespace: nd.ns.Name(), Addr: nd.addr})
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(l.stateDir, l.ID+".json")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("sonde lab: state file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("sonde lab: state file: %w", err)
	}
	l.state = path
	return nil
}

// StatePath is the lab's state file.
func (l *Lab) StatePath() string { return l.state }

// ListStates reads every state file in dir ("" means DefaultStateDir).
// A file that does not describe a lab of this directory (bad id, foreign
// namespace or log names) is an error, never a list of things to delete.
func ListStates(dir string) ([]State, error) {
	if dir == "" {
		dir = DefaultStateDir
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []State
	var errs []error
	for _, p := range paths {
		s, err := readState(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

func readState(path string) (State, error) {
	f, err := os.Open(path)
	if err != nil {
		return State{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxStateFile {
		return State{}, fmt.Errorf("%s: larger than %d bytes", path, maxStateFile)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.check(filepath.Dir(path)); err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	s.path = path
	return s, nil
}

// check makes sure that the state names only what its lab owns: clean
// and down delete what it lists.
func (s State) check(dir string) error {
	if err := CheckID(s.ID); err != nil {
		return err
	}
	if len(s.Nodes) > MaxLinks+1 {
		return fmt.Errorf("%d nodes (at most %d)", len(s.Nodes), MaxLinks+1)
	}
	for _, n := range s.Nodes {
		rest, ok := strings.CutPrefix(n.Namespace, NSPrefix+s.ID+"-")
		if !ok || rest != n.Name || rest == "" || strings.ContainsAny(rest, "/\x00 ") {
			return fmt.Errorf("namespace %q is not lab %s's node %q", n.Namespace, s.ID, n.Name)
		}
	}
	if s.Log != "" {
		if _, ok := detachedLogPID(s.Log); !ok || filepath.Dir(s.Log) != filepath.Clean(dir) {
			return fmt.Errorf("log %q is not a lab log of %s", s.Log, dir)
		}
	}
	return nil
}

// status is the state of the lab's process.
func (s State) status() procState { return procStatus(s.PID, s.PIDStart) }

// Alive reports whether the forwarding process still runs (and has not
// been killed).
func (s State) Alive() bool { return s.status() == procRunning }

// Status describes the lab's process: running, exiting or gone.
func (s State) Status() string { return s.status().String() }

// CheckID checks the form of a lab id: 6 lower-case hex digits.
func CheckID(id string) error {
	if len(id) != 6 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("lab id %q is not 6 hex digits", id)
	}
	return nil
}

// FindState returns the running lab with the given id, or the only running
// lab when id is empty.
func FindState(dir, id string) (State, error) {
	states, err := ListStates(dir)
	var live []State
	for _, s := range states {
		if s.Alive() && (id == "" || s.ID == id) {
			live = append(live, s)
		}
	}
	switch {
	case len(live) == 1:
		return live[0], nil
	case len(live) == 0 && id != "":
		var up []string
		for _, s := range states {
			if s.Alive() {
				up = append(up, s.ID+" ("+s.Profile+")")
			}
		}
		running := "no lab is up"
		if len(up) > 0 {
			running = "running: " + strings.Join(up, ", ")
		}
		if err != nil {
			// Some states could not be read: say why, as the reason the
			// lab may not have been found.
			running += "; " + err.Error()
		}
		return State{}, fmt.Errorf("sonde lab: no running lab %q (%s)", id, running)
	case len(live) == 0:
		return State{}, errors.New("sonde lab: no lab is up (start one with `sonde lab up PROFILE`)")
	}
	var ids []string
	for _, s := range live {
		ids = append(ids, s.ID+" ("+s.Profile+")")
	}
	return State{}, fmt.Errorf("sonde lab: %d labs are up, choose one with --id: %s", len(live), strings.Join(ids, ", "))
}

// Namespace returns a node's namespace.
func (s State) Namespace(node string) (string, error) {
	var names []string
	for _, n := range s.Nodes {
		if n.Name == node {
			return n.Namespace, nil
		}
		names = append(names, n.Name)
	}
	return "", fmt.Errorf("sonde lab: no node %q in lab %s (nodes: %s)", node, s.ID, strings.Join(names, ", "))
}

// Command returns a command running in a node of the recorded lab.
func (s State) Command(ctx context.Context, node, name string, args ...string) *exec.Cmd {
	ns, err := s.Namespace(node)
	if err != nil {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Err = err
		return cmd
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// Stop asks the lab's process to tear the lab down (SIGTERM) and waits up
// to timeout; whatever is left (the process died without cleaning) is
// removed here. It returns what it removed.
func (s State) Stop(timeout time.Duration) ([]string, error) {
	switch s.status() {
	case procRunning:
		if err := syscall.Kill(s.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("sonde lab: stop process %d: %w", s.PID, err)
		}
		fallthrough
	case procDying:
		if st := waitGone(s.PID, s.PIDStart, timeout); st != procGone {
			return nil, fmt.Errorf("sonde lab: lab %s: process %d still %s after %v (try `sonde lab clean --all`)", s.ID, s.PID, st, timeout)
		}
	}
	return s.removeLeftovers(time.Now().Add(CleanWait))
}

// removeLeftovers removes what the lab's dead process left: its
// namespaces (with the processes in them), TUN devices, log and state
// file, one line each in the result. Until deadline it waits for a dying
// process's claims on the namespaces to drop.
func (s State) removeLeftovers(deadline time.Time) ([]string, error) {
	var removed []string
	var errs []error
	for _, n := range s.Nodes {
		ns, err := claimBy(n.Namespace, deadline)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w", s.ID, err))
			continue
		}
		killNamespace(ns.Name())
		if err := ns.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "removed netns "+ns.Name())
	}
	devs, err := removeTUNs(netns.Prefix + s.ID)
	errs = append(errs, err)
	for _, d := range devs {
		removed = append(removed, "removed tun device "+d)
	}
	if err := errors.Join(errs...); err != nil {
		// Keep the state file: it is how a later clean finds the rest.
		return removed, err
	}
	for _, p := range []struct{ what, path string }{{"log", s.Log}, {"state", s.path}} {
		if p.path == "" {
			continue
		}
		switch err := os.Remove(p.path); {
		case err == nil:
			removed = append(removed, "removed "+p.what+" "+p.path)
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// claimBy claims the namespace, retrying until deadline while a dying
// process still holds it.
func claimBy(name string, deadline time.Time) (*netns.NS, error) {
	for {
		ns, err := netns.Claim(name)
		if !errors.Is(err, netns.ErrClaimed) || !time.Now().Before(deadline) {
			return ns, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// removeTUNs deletes the devices of this namespace (the one sonde lab
// clean runs in) whose name starts with prefix. A lab's TUN devices live
// in its namespaces and vanish with their process, but one made and not
// yet moved when the process died, or a persistent one, stays here.
func removeTUNs(prefix string) ([]string, error) {
	out, err := exec.Command("ip", "-o", "link", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("ip link show: %w", err)
	}
	var removed []string
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		// "12: sondeabc1231a: <...>" (a veth end would be "name@peer:").
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name := strings.TrimSuffix(f[1], ":")
		if !strings.HasPrefix(name, prefix) || strings.Contains(name, "@") {
			continue
		}
		if b, err := exec.Command("ip", "link", "delete", "dev", name).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link delete %s: %v: %s", name, err, strings.TrimSpace(string(b))))
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// Clean removes what dead labs recorded in dir left (namespaces, TUN
// devices, logs, state files), waiting up to CleanWait for a killed
// process to exit first, then lab namespaces that no live process owns
// (whatever their state directory), then logs of detached labs whose
// process has exited. With all, running labs of dir are stopped too
// (SIGTERM, then SIGKILL). Running labs and their files are left alone.
// It returns one line per thing removed or stopped. It needs root.
func Clean(dir string, all bool) ([]string, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("removing namespaces needs root (CAP_SYS_ADMIN)")
	}
	if dir == "" {
		dir = DefaultStateDir
	}
	states, err := ListStates(dir)
	var removed []string
	errs := []error{err}
	keepLogs := map[string]bool{}
	for _, s := range states {
		st := s.status()
		if st == procRunning && !all {
			keepLogs[s.Log] = true
			continue
		}
		if st == procRunning {
			_ = syscall.Kill(s.PID, syscall.SIGTERM)
			if st = waitGone(s.PID, s.PIDStart, CleanWait); st != procGone {
				_ = syscall.Kill(s.PID, syscall.SIGKILL)
			}
			removed = append(removed, fmt.Sprintf("stopped lab %s (process %d)", s.ID, s.PID))
		}
		if st = waitGone(s.PID, s.PIDStart, CleanWait); st != procGone {
			errs = append(errs, fmt.Errorf("lab %s: process %d still %s after %v; its files are kept", s.ID, s.PID, st, CleanWait))
			keepLogs[s.Log] = true
			continue
		}
		r, err := s.removeLeftovers(time.Now().Add(CleanWait))
		removed = append(removed, r...)
		if err != nil {
			keepLogs[s.Log] = true
			errs = append(errs, err)
		}
	}
	orphans, err := netns.ClaimOrphans(NSPrefix)
	errs = append(errs, err)
	for _, ns := range orphans {
		// A lab's TUN devices exist only while a process holds them open:
		// such a namespace is in use (by a sonde that predates claims)
		// whatever its claim says. A dead lab's holds only lo.
		if links, err := ns.Links(); err != nil || slices.ContainsFunc(links, func(l string) bool { return l != "lo" }) {
			ns.Release()
			errs = append(errs, err)
			continue
		}
		killNamespace(ns.Name())
		if err := ns.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "removed netns "+ns.Name()+" (no live owner)")
	}
	logs, err := cleanLogs(dir, keepLogs)
	removed = append(removed, logs...)
	errs = append(errs, err)
	return removed, errors.Join(errs...)
}

// staleStarting is the age after which a log still under its starting
// name (see NewDetachedLog) belongs to a `lab up --detach` that died.
const staleStarting = 2 * time.Minute

// cleanLogs removes the logs in dir of detached labs whose process is
// gone and that no state file in keep still lists.
func cleanLogs(dir string, keep map[string]bool) ([]string, error) {
	var removed []string
	var errs []error
	names, _ := filepath.Glob(filepath.Join(dir, "up-*.log"))
	for _, n := range names {
		pid, ok := detachedLogPID(n)
		if !ok || keep[n] || procStatus(pid, 0) != procGone {
			continue
		}
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "removed log "+n)
	}
	starting, _ := filepath.Glob(filepath.Join(dir, startingLogPattern))
	for _, n := range starting {
		if fi, err := os.Stat(n); err != nil || time.Since(fi.ModTime()) < staleStarting {
			continue
		}
		if err := os.Remove(n); err == nil {
			removed = append(removed, "removed log "+n)
		}
	}
	return removed, errors.Join(errs...)
}

// startingLogPattern names a detached lab's log before its process has a
// pid: hidden, and not matching up-*.log.
const startingLogPattern = ".up-*.log.new"

// NewDetachedLog creates the log of a detached lab in dir under a
// starting name; once the process runs, Rename it to DetachedLog(dir, pid).
func NewDetachedLog(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, startingLogPattern)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil { // like the state file
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// Exec replaces this process with args run in node's namespace (ip netns
// exec): the command gets the terminal and the signals, and its exit
// status is this process's. It returns only on failure.
func (s State) Exec(node string, args []string) error {
	ns, err := s.Namespace(node)
	if err != nil {
		return err
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return fmt.Errorf("lab exec: %w", err)
	}
	argv := append([]string{"ip", "netns", "exec", ns}, args...)
	return fmt.Errorf("lab exec: %w", syscall.Exec(ip, argv, os.Environ()))
}
