package counters

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Real agents on loopback: Debian's snmpd and prometheus-node-exporter
// (make apt-deps), each on an ephemeral port, reading the loopback
// interface's counters. The lab test (test/monitor) runs them in a
// router's namespace against cross traffic with ground truth.

func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start runs a program until the test ends (killed by its process group).
func start(t *testing.T, dir, name string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	log, err := os.Create(filepath.Join(dir, filepath.Base(name)+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("%s log (last 1 KB): %s", name, b[max(0, len(b)-1024):])
		}
	})
}

// SNMPDConfig is an snmpd configuration for tests: community sondepub
// (everything), community no64 (IF-MIB's ifTable only: no 64-bit
// counters), and v3 user sondeuser (SHA/AES, authPriv).
func snmpdConfig(addr string) string {
	return fmt.Sprintf(`agentAddress udp:%s
rocommunity sondepub default
view no64 included .1.3.6.1.2.1.1
view no64 included .1.3.6.1.2.1.2
rocommunity no64 default -V no64
createUser sondeuser SHA "authpass123" AES "privpass123"
rouser sondeuser priv
`, addr)
}

func startSNMPD(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("snmpd"); err != nil {
		if _, err := os.Stat("/usr/sbin/snmpd"); err != nil {
			t.Skip("snmpd not installed (make apt-deps)")
		}
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "udp"))
	conf := filepath.Join(dir, "snmpd.conf")
	if err := os.WriteFile(conf, []byte(snmpdConfig(addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, dir, "/usr/sbin/snmpd", []string{"SNMP_PERSISTENT_DIR=" + filepath.Join(dir, "p"), "MIBS="},
		"-f", "-Lf", filepath.Join(dir, "snmpd.out"), "-C", "-c", conf, "-p", filepath.Join(dir, "pid"))
	waitRead(t, "snmp://sondepub@"+addr+"/lo")
	return addr
}

func startNodeExporter(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		t.Skip("prometheus-node-exporter not installed (make apt-deps)")
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
	start(t, dir, bin, nil, "--web.listen-address="+addr, "--collector.disable-defaults", "--collector.netdev",
		"--collector.netdev.device-exclude=^sondenone$") // its default leaves lo out
	waitRead(t, "node-exporter://"+addr+"/metrics?device=lo")
	return addr
}

// waitRead reads spec until it works, for up to 10 s.
func waitRead(t *testing.T, spec string) {
	t.Helper()
	src := open(t, spec)
	defer src.Close()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, _, err = src.Read(); err == nil {
			return
		}
	}
	t.Fatalf("%s: not readable after 10 s: %v", spec, err)
}

func open(t *testing.T, spec string) Source {
	t.Helper()
	s, err := Parse(spec)
	if err != nil {
		t.Fatalf("Parse(%q): %v", spec, err)
	}
	src, err := Open(s)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func sysfsLo(t *testing.T) (rx, tx uint64) {
	t.Helper()
	for i, f := range []string{"rx_bytes", "tx_bytes"} {
		b, err := os.ReadFile("/sys/class/net/lo/statistics/" + f)
		if err != nil {
			t.Skip("no /sys/class/net/lo")
		}
		v, ok := parseCounterText(bytes.TrimSpace(b))
		if !ok {
			t.Fatalf("%s: %q", f, b)
		}
		if i == 0 {
			rx = v
		} else {
			tx = v
		}
	}
	return rx, tx
}

func parseCounterText(b []byte) (uint64, bool) {
	v, err := counterValue(b)
	return v, err == nil
}

// readOK reads src and checks the counters against the kernel's: the
// agent's values are the kernel's of some moment up to its cache's age
// before (net-snmp caches IF-MIB for a few seconds), so they lie between a
// reading of sysfs taken well before and one taken just after.
func readOK(t *testing.T, what string, src Source, loRx0 uint64) {
	t.Helper()
	rx, tx, err := src.Read()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	srx, stx := sysfsLo(t)
	if rx < loRx0 || rx > srx || tx > stx || tx == 0 {
		t.Errorf("%s: rx %d tx %d; the kernel's lo went from rx %d to rx %d tx %d", what, rx, tx, loRx0, srx, stx)
	}
}

func TestSNMPAgent(t *testing.T) {
	loRx0, _ := sysfsLo(t)
	addr := startSNMPD(t)
	for _, spec := range []string{
		"snmp://sondepub@" + addr + "/lo",
		"snmp://sondepub@" + addr + "/1", // lo is ifIndex 1 on Linux
		"snmp://sondeuser@" + addr + "/lo?version=3&auth=SHA&auth-pass=authpass123&priv=AES&priv-pass=privpass123",
	} {
		src := open(t, spec)
		readOK(t, spec, src, loRx0)
		src.Close()
	}

	// Bad input: one line each, naming what to check; the source goes on
	// being readable once the cause is gone (ifstat.Run retries).
	for _, c := range []struct{ spec, want string }{
		{"snmp://wrong@" + addr + "/lo?timeout=300ms", "agent unreachable, or a wrong community"},
		{"snmp://sondeuser@" + addr + "/lo?version=3&auth=SHA&auth-pass=wrongpass1&priv=AES&priv-pass=privpass123", "wrong v3 authentication pass phrase"},
		{"snmp://nobody@" + addr + "/lo?version=3&auth=SHA&auth-pass=authpass123", "does not know user \"nobody\""},
		{"snmp://sondepub@" + addr + "/nosuch0", `no interface "nosuch0" on the agent (ifName has "lo"`},
		{"snmp://sondepub@" + addr + "/4000", "no counters for ifIndex 4000"},
		{fmt.Sprintf("snmp://sondepub@127.0.0.1:%d/lo?timeout=300ms", freePort(t, "udp")), "127.0.0.1"},
	} {
		src := open(t, c.spec)
		_, _, err := src.Read()
		src.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line with %q", c.spec, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "authpass123") || strings.Contains(err.Error(), "wrongpass1")) {
			t.Errorf("%s: error shows a pass phrase: %v", c.spec, err)
		}
	}

	// An agent without the 64-bit counters: one line, then the 32-bit ones.
	src := open(t, "snmp://no64@"+addr+"/lo")
	defer src.Close()
	if _, _, err := src.Read(); err == nil || !strings.Contains(err.Error(), "no 64-bit counters") {
		t.Errorf("no64: first read %v; want the one line about 64-bit counters", err)
	}
	rx, tx, err := src.Read()
	if err != nil || rx == 0 || tx == 0 || rx >= 1<<32 || tx >= 1<<32 {
		t.Errorf("no64: then %d %d %v; want 32-bit counters", rx, tx, err)
	}
}

func TestNodeExporter(t *testing.T) {
	loRx0, _ := sysfsLo(t)
	addr := startNodeExporter(t)
	src := open(t, "node-exporter://"+addr+"/metrics?device=lo")
	readOK(t, "node exporter", src, loRx0)
	src.Close()

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/other":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprintln(w, "# HELP go_goroutines x\ngo_goroutines 7")
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintln(w, "<html></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ spec, want string }{
		{"node-exporter://" + addr + "/metrics?device=nosuch0", `no device "nosuch0" (the exporter has "`},
		{"node-exporter://" + host + "/other?device=eth0", "not a node exporter"},
		{"node-exporter://" + host + "/html?device=eth0", "not the text exposition format"},
		{"node-exporter://" + host + "/missing?device=eth0", `answered "404 Not Found"`},
		{fmt.Sprintf("node-exporter://127.0.0.1:%d/metrics?device=eth0", freePort(t, "tcp")), "connection refused"},
	} {
		src := open(t, c.spec)
		_, _, err := src.Read()
		src.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v; want one line with %q", c.spec, err, c.want)
		}
	}
}
