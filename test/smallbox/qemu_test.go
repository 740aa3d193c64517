//go:build linux

// Package smallbox runs the monitor-only build (make monitor-release, tag
// monitoronly) for the boxes it is made for, linux/arm64, linux/arm
// (ARMv7) and linux/mipsle (GOMIPS=softfloat: OpenWrt's MT7621 routers),
// whose store is a journal (internal/store, journal.go: no SQLite), under
// Debian's qemu-user-static on this machine, against a
// `sonde serve` on loopback, and checks the rows each stores
// (docs/monitor.md, "Where to run it").
package smallbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/testbin"
)

var sondeBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &sondeBin, false)) }

// runFor is how long each emulated monitor probes: enough for a start
// under emulation (the first second is slow) and two store batches.
const runFor = 8 * time.Second

func TestMonitorBuildUnderQEMU(t *testing.T) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := start(t, sondeBin, "serve", "--addr", addr)
	defer stop(srv)
	waitTCP(t, addr)
	for _, c := range []struct{ arch, goarm, qemu string }{
		{"arm64", "", "qemu-aarch64-static"},
		{"arm", "7", "qemu-arm-static"},
		{"mipsle", "", "qemu-mipsel-static"},
	} {
		t.Run(c.arch, func(t *testing.T) {
			emu, err := exec.LookPath(c.qemu)
			if err != nil {
				t.Skipf("%s not installed (make apt-deps: qemu-user-static)", c.qemu)
			}
			dir := t.TempDir()
			bin := filepath.Join(dir, "sonde-monitor-linux-"+c.arch)
			// The flags of make monitor-release (MONITOR_BUILD).
			build := exec.Command("go", "build", "-tags", "monitoronly,nethttpomithttp2", "-gcflags=all=-l", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/sonde")
			build.Dir = root
			build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+c.arch, "GOARM="+c.goarm, "GOMIPS=softfloat")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build: %v\n%s", err, out)
			}
			// The bar for the boards, mips included (no SQLite).
			if fi, err := os.Stat(bin); err == nil {
				t.Logf("%s: %d bytes stripped", filepath.Base(bin), fi.Size())
				if fi.Size() >= 12e6 {
					t.Errorf("%s: %d bytes stripped, the bar is 12 MB (docs/monitor.md, \"Where to run it\")", filepath.Base(bin), fi.Size())
				}
			}
			// Only the monitor: a server command is not there.
			if out, err := exec.Command(emu, bin, "serve").CombinedOutput(); err == nil {
				t.Errorf("the monitor build runs serve:\n%s", out)
			}
			jdir := filepath.Join(dir, "journal")
			db := "journal:" + jdir
			name := "qemu-" + c.arch
			from := time.Now()
			mon := start(t, emu, bin, "monitor", "run", "--target", addr, "--probe-interval", "100ms", "--store", db, "--listen", "off", "--name", name)
			time.Sleep(runFor)
			stop(mon)
			to := time.Now()

			// Left out of this build (no HTML renderer, no profiler): one
			// line and exit 2, before anything is read.
			for _, args := range [][]string{
				{"monitor", "report", "--store", db, "--html", filepath.Join(dir, "r.html")},
				{"monitor", "run", "--target", addr, "--store", db, "--debug-pprof", "127.0.0.1:0"},
			} {
				out, err := exec.Command(emu, append([]string{bin}, args...)...).CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "monitor-only build") {
					t.Errorf("%v: %v, want exit 2 naming the monitor-only build:\n%s", args[:2], err, out)
				}
			}
			// No SQLite in this build: a SQLite store is one line, exit 2.
			out, err := exec.Command(emu, bin, "monitor", "run", "--target", addr, "--store", filepath.Join(dir, "m.db")).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "full sonde") || strings.Count(string(out), "\n") != 1 {
				t.Errorf("a SQLite store in the monitor build: %v, want one line and exit 2 naming the full sonde:\n%s", err, out)
			}
			// The build's own report reads its journal.
			if out, err := exec.Command(emu, bin, "monitor", "report", "--store", db, "--since", "1h").CombinedOutput(); err != nil || !strings.Contains(string(out), name) {
				t.Errorf("monitor report of the journal: %v\n%s", err, out)
			}

			// Read as a report does: the journal is there, opened read-only.
			st, err := store.OpenExisting(context.Background(), store.Location{Backend: store.Journal, Path: jdir})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ms, err := st.ListMonitors(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			id, ok := ms[name]
			if !ok {
				t.Fatalf("monitor %q not in the journal: %v", name, ms)
			}
			var n, answered int
			err = st.Probes(context.Background(), id, from.UnixNano(), to.UnixNano(), func(p model.ProbeSample) error {
				n++
				if !p.Lost && p.RTTNs > 0 && p.RTTNs < int64(time.Second) {
					answered++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// 10/s for 8 s is 80; the emulated start and the last
			// unfinished batch take some: at least half must be stored,
			// nearly all answered on loopback.
			t.Logf("%s under %s: %d probes stored, %d answered", c.arch, c.qemu, n, answered)
			if n < 40 || answered < n*9/10 {
				t.Errorf("%d probes stored, %d answered; want ≥ 40, ≥ 90 %% answered", n, answered)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		out.Close()
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("%s output: %s", filepath.Base(name), b[max(0, len(b)-2048):])
		}
	})
	return p
}

// stop interrupts the process as systemd would (SIGTERM) and waits up to
// 10 s for it to write its last batch and exit.
func stop(p *proc) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func waitTCP(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("%s not listening after 10 s: %w", addr, err))
		}
	}
}
