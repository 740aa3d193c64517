package lab

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcStatus(t *testing.T) {
	self := os.Getpid()
	start, err := procStart(self)
	if err != nil {
		t.Fatal(err)
	}
	if st := procStatus(self, start); st != procRunning {
		t.Fatalf("this process: %v, want running", st)
	}
	// Another start time: the pid names a later process.
	if st := procStatus(self, start+1); st != procGone {
		t.Fatalf("this pid with another start time: %v, want gone", st)
	}
	// A zombie (killed, not yet waited for) runs nothing.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if st := procStatus(pid, 0); st != procRunning {
		t.Fatalf("sleep: %v, want running", st)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if st := waitGone(pid, 0, 5*time.Second); st != procGone {
		t.Fatalf("killed sleep (zombie): %v after 5 s, want gone", st)
	}
	_ = cmd.Wait()
	if st := procStatus(pid, 0); st != procGone {
		t.Fatalf("reaped sleep: %v, want gone", st)
	}
	if st := procStatus(0, 0); st != procGone {
		t.Fatalf("pid 0: %v", st)
	}
}

func TestDetachedLogName(t *testing.T) {
	for name, want := range map[string]int{
		"/run/sonde/lab/up-123.log":   123,
		"up-1.log":                    1,
		"up-0.log":                    0,
		"up--5.log":                   0,
		"up-+5.log":                   0,
		"up-05.log":                   0,
		"up-5.log.new":                0,
		".up-5.log":                   0,
		"up-.log":                     0,
		"up-99999999999999999999.log": 0,
	} {
		pid, ok := detachedLogPID(name)
		if pid != want || ok != (want > 0) {
			t.Errorf("detachedLogPID(%q) = %d, %v; want %d", name, pid, ok, want)
		}
	}
	if p := DetachedLog("/d", 42); p != "/d/up-42.log" {
		t.Fatalf("DetachedLog = %s", p)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStateCheck(t *testing.T) {
	dir := t.TempDir()
	good := State{ID: "0a1b2c", PID: 1, Nodes: []StateNode{
		{Name: "client", Namespace: NSPrefix + "0a1b2c-client"},
		{Name: "server", Namespace: NSPrefix + "0a1b2c-server"},
	}, Log: DetachedLog(dir, 77)}
	writeJSON(t, filepath.Join(dir, "0a1b2c.json"), good)
	states, err := ListStates(dir)
	if err != nil || len(states) != 1 || states[0].ID != "0a1b2c" {
		t.Fatalf("ListStates = %+v, %v", states, err)
	}
	// Each of these would make clean delete what the lab does not own.
	for name, mutate := range map[string]func(*State){
		"other lab's namespace": func(s *State) { s.Nodes[0].Namespace = NSPrefix + "ffffff-client" },
		"foreign namespace":     func(s *State) { s.Nodes[1].Namespace = "myns" },
		"node name mismatch":    func(s *State) { s.Nodes[1].Name = "router-1" },
		"log elsewhere":         func(s *State) { s.Log = "/etc/passwd" },
		"log not a lab log":     func(s *State) { s.Log = filepath.Join(dir, "important.txt") },
		"log in a subdirectory": func(s *State) { s.Log = filepath.Join(dir, "x", "up-1.log") },
		"bad id":                func(s *State) { s.ID = "../../x" },
		"too many nodes": func(s *State) {
			for i := 0; i <= MaxLinks; i++ {
				s.Nodes = append(s.Nodes, StateNode{Name: "n", Namespace: NSPrefix + s.ID + "-n"})
			}
		},
	} {
		s := good
		s.Nodes = append([]StateNode(nil), good.Nodes...)
		mutate(&s)
		d := t.TempDir()
		if s.Log == DetachedLog(dir, 77) {
			s.Log = DetachedLog(d, 77)
		}
		writeJSON(t, filepath.Join(d, "x.json"), s)
		if states, err := ListStates(d); err == nil || len(states) != 0 {
			t.Errorf("%s: accepted (%+v)", name, states)
		}
	}
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"id":"`+strings.Repeat("a", maxStateFile)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ListStates(filepath.Dir(big)); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("oversized state file: %v", err)
	}
}

func FuzzReadState(f *testing.F) {
	f.Add([]byte(`{"id":"0a1b2c","pid":1,"nodes":[{"name":"client","netns":"sondelab-0a1b2c-client"}],"log":"DIR/up-5.log"}`))
	f.Add([]byte(`{"id":"0a1b2c","nodes":[{"name":"","netns":"sondelab-0a1b2c-"}]}`))
	f.Add([]byte(`{"id":"zzzzzz"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"log":"DIR/../up-1.log","id":"aaaaaa"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		b = []byte(strings.ReplaceAll(string(b), "DIR", dir))
		path := filepath.Join(dir, "s.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := readState(path)
		if err != nil {
			return
		}
		// What an accepted state lets clean delete is its own.
		for _, n := range s.Nodes {
			if !strings.HasPrefix(n.Namespace, NSPrefix+s.ID+"-") || strings.Contains(n.Namespace, "/") {
				t.Fatalf("accepted namespace %q for lab %q", n.Namespace, s.ID)
			}
		}
		if s.Log != "" {
			if filepath.Dir(s.Log) != dir || !strings.HasPrefix(filepath.Base(s.Log), "up-") {
				t.Fatalf("accepted log %q outside %s", s.Log, dir)
			}
		}
	})
}

func TestCleanLogs(t *testing.T) {
	dir := t.TempDir()
	gonePID := func() int {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return cmd.Process.Pid
	}()
	dead := DetachedLog(dir, gonePID)
	live := DetachedLog(dir, os.Getpid())
	listed := DetachedLog(dir, gonePID+1<<22) // beyond pid_max: dead, but a kept state lists it
	other := filepath.Join(dir, "notes.log")
	starting, err := NewDetachedLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	starting.Close()
	stale, err := NewDetachedLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	stale.Close()
	old := time.Now().Add(-2 * staleStarting)
	for _, p := range []string{dead, live, listed, other} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(stale.Name(), old, old); err != nil {
		t.Fatal(err)
	}
	removed, err := cleanLogs(dir, map[string]bool{listed: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"removed log " + dead, "removed log " + stale.Name()}
	if strings.Join(removed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("removed %q, want %q", removed, want)
	}
	for _, p := range []string{live, listed, other, starting.Name()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if fi, err := os.Stat(starting.Name()); err == nil && fi.Mode().Perm() != 0o644 {
		t.Errorf("log mode %v", fi.Mode().Perm())
	}
}
