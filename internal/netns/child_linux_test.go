package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gone reports whether pid has exited (a zombie counts: it runs nothing).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// TestChildHelperParent is not a test: TestStartChildDiesWithParent runs
// the test binary as a parent process that starts a child and is then
// killed.
func TestChildHelperParent(t *testing.T) {
	if os.Getenv("SONDE_NETNS_CHILD_HELPER") != "1" {
		t.Skip("helper process for TestStartChildDiesWithParent")
	}
	// The caller's goroutine locks its thread and returns without
	// unlocking, so the runtime ends that thread: the child must not get
	// its parent-death signal for that. The main thread never ends, so a
	// goroutine that lands there keeps it and another one tries.
	res := make(chan *Child)
	var c *Child
	for try := 0; c == nil && try < 10; try++ {
		go func() {
			runtime.LockOSThread()
			if syscall.Gettid() == os.Getpid() {
				res <- nil
				select {}
			}
			c, err := StartChild(exec.Command("sleep", "60"), syscall.SIGKILL)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			res <- c
		}()
		c = <-res
	}
	if c == nil {
		fmt.Println("error: every goroutine ran on the main thread")
		os.Exit(1)
	}
	fmt.Println("child", c.Pid())
	time.Sleep(30 * time.Second) // killed long before
	os.Exit(3)
}

func TestStartChildDiesWithParent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	parent := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildHelperParent$", "-test.count=1")
	parent.Env = append(os.Environ(), "SONDE_NETNS_CHILD_HELPER=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	sc := bufio.NewScanner(out)
	child := 0
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "child" {
			child, _ = strconv.Atoi(f[1])
			break
		}
		t.Logf("helper: %s", sc.Text())
	}
	if child <= 0 {
		t.Fatal("helper printed no child pid")
	}
	defer syscall.Kill(child, syscall.SIGKILL) // if the test fails
	// The thread that called StartChild has ended by now; the child lives
	// on because the fork happened on StartChild's own thread.
	time.Sleep(300 * time.Millisecond)
	if gone(child) {
		t.Fatalf("child %d died while its parent runs (parent-death signal tied to the caller's thread)", child)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(child) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still runs 5 s after its parent was killed", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartChildWait(t *testing.T) {
	c, err := StartChild(exec.Command("sh", "-c", "exit 3"), syscall.SIGKILL)
	if err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := c.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Wait")
	}
	if _, err := StartChild(exec.Command("/nonexistent/sonde-test"), syscall.SIGKILL); err == nil {
		t.Fatal("StartChild of a missing program succeeded")
	}
}
