package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/netns"
)

// State is a running lab as recorded in its state file, for the sonde
// processes that did not build it (lab exec, lab down, lab clean).
type State struct {
	ID      string      `json:"id"`
	Profile string      `json:"profile"`
	PID     int         `json:"pid"` // the process forwarding packets
	Seed    uint64      `json:"seed"`
	Started time.Time   `json:"started"`
	Nodes   []StateNode `json:"nodes"`
	Client  string      `json:"client_addr"`
	Server  string      `json:"server_addr"`

	path string
}

// StateNode is one node of a recorded lab.
type StateNode struct {
	Name      string `json:"name"`
	Namespace string `json:"netns"`
	Addr      string `json:"addr"`
}

func (l *Lab) writeState() error {
	if err := os.MkdirAll(l.stateDir, 0o755); err != nil {
		return fmt.Errorf("sonde lab: state dir: %w", err)
	}
	s := State{ID: l.ID, Profile: l.Profile.Name, PID: os.Getpid(), Seed: l.Seed, Started: l.Start,
		Client: l.ClientAddr(), Server: l.ServerAddr()}
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
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var s State
		if err := json.Unmarshal(b, &s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		s.path = p
		out = append(out, s)
	}
	return out, errors.Join(errs...)
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
		return State{}, fmt.Errorf("sonde lab: no running lab %q (%v)", id, err)
	case len(live) == 0:
		return State{}, errors.New("sonde lab: no lab is up (start one with `sonde lab up PROFILE`)")
	}
	var ids []string
	for _, s := range live {
		ids = append(ids, s.ID+" ("+s.Profile+")")
	}
	return State{}, fmt.Errorf("sonde lab: %d labs are up, choose one with --id: %s", len(live), strings.Join(ids, ", "))
}

// Alive reports whether the forwarding process still runs.
func (s State) Alive() bool {
	if s.PID <= 0 {
		return false
	}
	err := syscall.Kill(s.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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
// removed here.
func (s State) Stop(timeout time.Duration) error {
	if s.Alive() {
		if err := syscall.Kill(s.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("sonde lab: stop process %d: %w", s.PID, err)
		}
		for deadline := time.Now().Add(timeout); s.Alive() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if s.Alive() {
			return fmt.Errorf("sonde lab: process %d did not stop within %v (try `sonde lab clean --all`)", s.PID, timeout)
		}
	}
	return s.removeLeftovers()
}

func (s State) removeLeftovers() error {
	var errs []error
	for _, n := range s.Nodes {
		if ns, err := netns.Open(n.Namespace); err == nil {
			killNamespace(n.Namespace)
			errs = append(errs, ns.Delete())
		}
	}
	if s.path != "" {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Clean removes what crashed labs left: state files whose process is gone,
// with their namespaces, and lab namespaces no running lab owns. With all,
// running labs are stopped too (their process gets SIGTERM, then SIGKILL).
// It returns what it removed.
func Clean(dir string, all bool) ([]string, error) {
	states, err := ListStates(dir)
	var removed []string
	errs := []error{err}
	owned := map[string]bool{}
	for _, s := range states {
		if s.Alive() && !all {
			for _, n := range s.Nodes {
				owned[n.Namespace] = true
			}
			continue
		}
		if s.Alive() {
			if err := s.Stop(5 * time.Second); err != nil {
				_ = syscall.Kill(s.PID, syscall.SIGKILL)
				time.Sleep(100 * time.Millisecond)
			}
			removed = append(removed, fmt.Sprintf("process %d (lab %s)", s.PID, s.ID))
		}
		errs = append(errs, s.removeLeftovers())
		removed = append(removed, "state "+s.path)
	}
	names, err := netns.List()
	errs = append(errs, err)
	for _, name := range names {
		if !strings.HasPrefix(name, NSPrefix) || owned[name] {
			continue
		}
		ns, err := netns.Open(name)
		if err != nil {
			continue
		}
		killNamespace(name)
		if err := ns.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "netns "+name)
	}
	return removed, errors.Join(errs...)
}
