package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
)

// runMainEnv makes the test binary run sonde's main instead of the tests,
// so that these tests drive the real command (and its re-executions of
// itself: lab up --detach, test --lab) without building a binary.
const runMainEnv = "SONDE_TEST_RUN_MAIN"

func init() {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
}

// sonde returns a command running this test binary as sonde.
func sonde(t *testing.T, ctx context.Context, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

func needRootLab(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) to build labs")
	}
}

var labUpRe = regexp.MustCompile(`lab ([0-9a-f]{6}) \(`)

// detachedLab starts `sonde lab up wire --detach` recorded in dir and
// returns its state; the test's end takes it down if it still runs.
func detachedLab(t *testing.T, dir string) lab.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := sonde(t, ctx, "lab", "up", "--state-dir", dir, "wire", "--detach").CombinedOutput()
	if err != nil {
		t.Fatalf("lab up --detach: %v\n%s", err, out)
	}
	m := labUpRe.FindSubmatch(out)
	if m == nil {
		t.Fatalf("lab up --detach printed no lab id:\n%s", out)
	}
	states, err := lab.ListStates(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.ID == string(m[1]) {
			t.Cleanup(func() {
				if s.Alive() {
					if _, err := s.Stop(10 * time.Second); err != nil {
						t.Errorf("lab %s down: %v", s.ID, err)
					}
				}
			})
			return s
		}
	}
	t.Fatalf("no state file for lab %s in %s", m[1], dir)
	return lab.State{}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// labFiles are the things a lab owns that a test can see.
func labFiles(s lab.State, dir string) []string {
	f := []string{dir + "/" + s.ID + ".json", s.Log}
	for _, n := range s.Nodes {
		f = append(f, "/run/netns/"+n.Namespace)
	}
	return f
}

// TestLabCleanAfterKill9: a detached lab whose process was killed with
// SIGKILL is cleaned by one `lab clean`, completely, while another lab of
// the same state directory and one of another directory keep everything.
func TestLabCleanAfterKill9(t *testing.T) {
	needRootLab(t)
	dir, otherDir := t.TempDir(), t.TempDir()
	victim := detachedLab(t, dir)
	sibling := detachedLab(t, dir)
	stranger := detachedLab(t, otherDir)
	if victim.Log == "" || !exists(victim.Log) {
		t.Fatalf("detached lab records no log (%q)", victim.Log)
	}
	for _, f := range labFiles(victim, dir) {
		if !exists(f) {
			t.Fatalf("%s missing before the kill", f)
		}
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Right away, in this process (no start-up delay): clean must wait
	// for the dying process itself. lab.Clean is what `lab clean` runs
	// and prints; the second clean below goes through the command.
	lines, err := lab.Clean(dir, false)
	out := []byte(strings.Join(lines, "\n") + "\n")
	t.Logf("lab clean:\n%s", out)
	if err != nil {
		t.Fatalf("lab clean: %v", err)
	}
	for _, f := range labFiles(victim, dir) {
		if exists(f) {
			t.Errorf("%s of the killed lab remains after one clean", f)
		}
		what := "removed "
		if strings.HasPrefix(f, "/run/netns/") {
			what += "netns " + strings.TrimPrefix(f, "/run/netns/")
		} else {
			what += map[bool]string{true: "log ", false: "state "}[f == victim.Log] + f
		}
		if !bytes.Contains(out, []byte(what+"\n")) {
			t.Errorf("clean did not report %q", what)
		}
	}
	for _, s := range []struct {
		lab.State
		dir string
	}{{sibling, dir}, {stranger, otherDir}} {
		if !s.Alive() {
			t.Errorf("lab %s's process %d was stopped", s.ID, s.PID)
		}
		for _, f := range labFiles(s.State, s.dir) {
			if !exists(f) {
				t.Errorf("clean removed %s of the running lab %s", f, s.ID)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err = sonde(t, ctx, "lab", "clean", "--state-dir", dir).CombinedOutput()
	if err != nil || !bytes.HasPrefix(out, []byte("nothing to clean")) {
		t.Fatalf("second clean: %v\n%s", err, out)
	}
}

// nsPids lists the processes in a namespace.
func nsPids(t *testing.T, ns string) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", ns, err)
	}
	return strings.Fields(string(out))
}

// TestTestLabKill9: `sonde test --lab` killed with SIGKILL leaves no
// sonde serve (nor client) running in the lab's namespaces.
func TestTestLabKill9(t *testing.T) {
	needRootLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := sonde(t, ctx, "test", "--lab", "wire", "-t", "20s")
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its children hold the output pipe: do not wait for them here.
	cmd.WaitDelay = 200 * time.Millisecond
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// test --lab records its lab in the default state directory.
	var st lab.State
	var server, client string
	deadline := time.Now().Add(15 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no lab of process %d with a server and a client after 15 s:\n%s", cmd.Process.Pid, out.String())
		}
		time.Sleep(50 * time.Millisecond)
		if st.ID == "" {
			states, _ := lab.ListStates(lab.DefaultStateDir)
			for _, s := range states {
				if s.PID == cmd.Process.Pid && s.Alive() {
					st = s
					t.Cleanup(func() {
						if _, err := s.Stop(10 * time.Second); err != nil {
							t.Errorf("remove lab %s: %v", s.ID, err)
						}
					})
				}
			}
			if st.ID == "" {
				continue
			}
			var err error
			if server, err = st.Namespace(lab.Server); err != nil {
				t.Fatal(err)
			}
			if client, err = st.Namespace(lab.Client); err != nil {
				t.Fatal(err)
			}
		}
		if sp, cp := nsPids(t, server), nsPids(t, client); len(sp) > 0 && len(cp) > 0 {
			t.Logf("killing test --lab (pid %d): server namespace runs %s, client namespace %s",
				cmd.Process.Pid, commands(sp), commands(cp))
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for _, w := range []struct {
		ns      string
		timeout time.Duration
	}{{server, 5 * time.Second}, {client, 5 * time.Second}} {
		for deadline := killed.Add(w.timeout); ; time.Sleep(50 * time.Millisecond) {
			left := nsPids(t, w.ns)
			if len(left) == 0 {
				t.Logf("%s empty %v after SIGKILL", w.ns, time.Since(killed).Round(time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%v after SIGKILL of test --lab, %s still runs %s:\n%s", w.timeout, w.ns, commands(left), out.String())
			}
		}
	}
}

// commands names the processes of pids ("pid:comm").
func commands(pids []string) string {
	var out []string
	for _, p := range pids {
		comm, _ := os.ReadFile("/proc/" + p + "/comm")
		out = append(out, p+":"+strings.TrimSpace(string(comm)))
	}
	return strings.Join(out, " ")
}
