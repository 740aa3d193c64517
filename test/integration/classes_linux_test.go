package integration

import (
	"net"
	"strconv"
	"testing"
)

// TestQoSClasses runs a classes test on loopback with one class on the
// server's main port and one on an extra listener, and checks that each
// class moved data in both directions.
func TestQoSClasses(t *testing.T) {
	srv := startServer(t, nil, "--addr", "127.0.0.1:0", "--extra-addr", "127.0.0.1:0", "--per-ip-rate", "off")
	if len(srv.addrs) != 2 {
		t.Fatalf("server listens on %v, want two addresses", srv.addrs)
	}
	_, extra, err := net.SplitHostPort(srv.addrs[1])
	if err != nil {
		t.Fatal(err)
	}
	extraPort, _ := strconv.Atoi(extra)
	res, _ := runJSON(t, nil, runTimeout, srv.addr(), "-t", "1s", "--streams", "1", "--classes", "ef:46,be:0@"+extra)

	if len(res.Config.Classes) != 2 {
		t.Fatalf("config classes %+v, want 2", res.Config.Classes)
	}
	if res.Classes == nil {
		t.Fatal("no classes result")
	}
	if res.Classes.DurationS != 1 {
		t.Errorf("classes duration %v s, want 1", res.Classes.DurationS)
	}
	type key struct{ class, dir string }
	seen := map[key]bool{}
	for _, f := range res.Classes.Flows {
		k := key{f.Class.Name, f.Direction}
		if seen[k] {
			t.Errorf("class %s %s reported twice", k.class, k.dir)
		}
		seen[k] = true
		wantDSCP, wantPort := 46, 0
		if f.Class.Name == "be" {
			wantDSCP, wantPort = 0, extraPort
		}
		if f.Class.DSCP != wantDSCP || f.Class.Port != wantPort {
			t.Errorf("class %s: DSCP %d port %d, want %d and %d", f.Class.Name, f.Class.DSCP, f.Class.Port, wantDSCP, wantPort)
		}
		if f.Bytes <= 0 || !(f.GoodputBps > 0) {
			t.Errorf("class %s %s: %d bytes at %.0f bit/s, want > 0", f.Class.Name, f.Direction, f.Bytes, f.GoodputBps)
		}
		if f.MarksOK != nil && !*f.MarksOK {
			t.Errorf("class %s %s: receiver saw DSCP %v, not %d", f.Class.Name, f.Direction, f.ReceivedDSCP, f.Class.DSCP)
		}
		t.Logf("class %s %s: %.2f Gbit/s", f.Class.Name, f.Direction, f.GoodputBps/1e9)
	}
	for _, c := range []string{"ef", "be"} {
		for _, d := range []string{"download", "upload"} {
			if !seen[key{c, d}] {
				t.Errorf("no %s result for class %s", d, c)
			}
		}
	}
	srv.wantAlive(t)
}

// TestQoSClassesClosedPort checks that a class on a port the server does
// not serve fails the run at once, before any load, with a one-line reason.
func TestQoSClassesClosedPort(t *testing.T) {
	srv := startServer(t, nil, "--addr", "127.0.0.1:0", "--per-ip-rate", "off")
	closed := closedPort(t)
	r := run(t, nil, runTimeout, "test", srv.addr(), "-t", "1s", "--streams", "1", "--direction", "download",
		"--no-foreign-probes", "--classes", "ef:46,be:0@"+closed, "--no-progress")
	wantOneLineError(t, r, "class be", "does not serve port "+closed, "--extra-addr")
	srv.wantAlive(t)
}

// closedPort returns a loopback port that was free a moment ago and has no
// listener now.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}
