package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/netns"
	"github.com/sonde-project/sonde/internal/testbin"
)

// sondeBin is the binary under test, built once by TestMain.
var sondeBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &sondeBin, false)) }

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: creates network namespaces and veth links (run go test as root)")
	}
}

// command prepares the binary (or another program, if name is not "") to
// run in its own process group, inside ns when ns is not nil, so that
// cleanup can kill it with every child it started.
func command(ctx context.Context, ns *netns.NS, name string, args ...string) *exec.Cmd {
	if name == "" {
		name = sondeBin
	}
	var cmd *exec.Cmd
	if ns != nil {
		cmd = ns.Command(ctx, name, args...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// runResult is what one finished run of the binary left behind.
type runResult struct {
	args    []string
	stdout  string
	stderr  string
	code    int
	elapsed time.Duration
}

func (r runResult) String() string {
	return fmt.Sprintf("sonde %s: exit %d after %v\nstderr:\n%s", strings.Join(r.args, " "), r.code,
		r.elapsed.Round(time.Millisecond), r.stderr)
}

// run runs `sonde args...` to completion within timeout; a run that does
// not end in time is a hang and fails the test.
func run(t *testing.T, ns *netns.NS, timeout time.Duration, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := command(ctx, ns, "", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := runResult{args: args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("sonde %s hung: killed after %v; stderr:\n%s", strings.Join(args, " "), timeout, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("sonde %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("sonde %s: exit %d in %v", strings.Join(args, " "), r.code, r.elapsed.Round(time.Millisecond))
	return r
}

// runJSON runs `sonde test args...` with --json into a temporary file and
// returns the decoded result; the run must succeed.
func runJSON(t *testing.T, ns *netns.NS, timeout time.Duration, args ...string) (*model.Result, runResult) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "result.json")
	args = append(append([]string{"test"}, args...), "--json", file, "-q", "--no-progress")
	r := run(t, ns, timeout, args...)
	res := readResult(t, file)
	if r.code != 0 {
		errs := "(no result file)"
		if res != nil {
			errs = strings.Join(res.Errors, "; ")
		}
		t.Fatalf("%v\nresult errors: %s", r, errs)
	}
	if res == nil {
		t.Fatalf("%v\nno result written to %s", r, file)
	}
	if len(res.Errors) > 0 {
		t.Errorf("successful run recorded errors: %q", res.Errors)
	}
	return res, r
}

func readResult(t *testing.T, file string) *model.Result {
	t.Helper()
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var res model.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result JSON: %v", err)
	}
	return &res
}

// wantOneLineError checks a failed run's user-facing error: a non-zero exit
// and exactly one line on stderr, "sonde: ..." with every word in words
// (case-insensitive) and no trace of a crash.
func wantOneLineError(t *testing.T, r runResult, words ...string) {
	t.Helper()
	if r.code == 0 {
		t.Errorf("%v\nwant a non-zero exit", r)
	}
	var lines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%v\nwant exactly one line on stderr, got %d", r, len(lines))
		return
	}
	line := lines[0]
	t.Logf("stderr: %s", line)
	if !strings.HasPrefix(line, "sonde: ") {
		t.Errorf("stderr %q does not start with \"sonde: \"", line)
	}
	for _, bad := range []string{"goroutine", "panic", "runtime error"} {
		if strings.Contains(line, bad) {
			t.Errorf("stderr %q looks like a crash (%q)", line, bad)
		}
	}
	low := strings.ToLower(line)
	for _, w := range words {
		if !strings.Contains(low, strings.ToLower(w)) {
			t.Errorf("stderr %q lacks %q", line, w)
		}
	}
}

// lineWriter collects a process's output for inspection while it runs.
type lineWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// proc is a background process (server, capture) that cleanup ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *lineWriter
	stdout *lineWriter
	done   chan struct{}
	err    error
}

// startProc starts name (sonde when "") in the background, in ns if not
// nil, and registers its end with t.Cleanup.
func startProc(t *testing.T, ns *netns.NS, name string, args ...string) *proc {
	t.Helper()
	cmd := command(context.Background(), ns, name, args...)
	p := &proc{name: filepath.Base(cmd.Path), cmd: cmd, stderr: &lineWriter{}, stdout: &lineWriter{}, done: make(chan struct{})}
	if name == "" {
		p.name = "sonde"
	}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// stop signals the process group and waits for it to exit, killing it if it
// does not within 5 s.
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitStderr waits until stderr holds n lines containing substr and returns
// them; it fails the test if the process exits first or time runs out.
func (p *proc) waitStderr(t *testing.T, substr string, n int, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var got []string
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, substr) {
				got = append(got, l)
			}
		}
		if len(got) >= n {
			return got
		}
		if p.exited() {
			t.Fatalf("%s exited before printing %q: %v\nstderr:\n%s", p.name, substr, p.err, p.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no %q within %v\nstderr:\n%s", p.name, substr, timeout, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// server is a running `sonde serve`.
type server struct {
	*proc
	addrs []string // host:port of each listener, main one first
}

// startServer runs `sonde serve args...` and waits until each of its
// listeners (one per --addr and --extra-addr) is serving.
func startServer(t *testing.T, ns *netns.NS, args ...string) *server {
	t.Helper()
	n := 1
	for _, a := range args {
		if a == "--extra-addr" {
			n++
		}
	}
	p := startProc(t, ns, "", append([]string{"serve"}, args...)...)
	s := &server{proc: p}
	for _, l := range p.waitStderr(t, "sonde: serving ", n, 10*time.Second) {
		f := strings.Fields(l)
		s.addrs = append(s.addrs, f[len(f)-1])
	}
	return s
}

// addr is the main listener's host:port.
func (s *server) addr() string { return s.addrs[0] }

// wantAlive checks that the server still runs and never logged a crash.
func (s *server) wantAlive(t *testing.T) {
	t.Helper()
	if s.exited() {
		t.Fatalf("server exited: %v\nstderr:\n%s", s.err, s.stderr)
	}
	for _, bad := range []string{"panic", "goroutine "} {
		if strings.Contains(s.stderr.String(), bad) {
			t.Errorf("server stderr shows a crash (%q):\n%s", bad, s.stderr)
		}
	}
}
