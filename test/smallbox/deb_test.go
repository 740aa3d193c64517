//go:build linux

package smallbox

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/testbin"
)

// TestDebianPackage installs the amd64 package (contrib/deb, make deb) on
// this machine, starts its two units' commands as systemd would (systemd is
// not PID 1 here: the ExecStart lines run as the unit's user with the
// unit's ambient capability, EnvironmentFile read), checks that the
// monitor stores probes of the packaged server, then removes the package
// and checks that the data stayed. It cleans up after itself (purge, the
// state directory, the user).
func TestDebianPackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: installs a package")
	}
	for _, b := range []string{"dpkg", "dpkg-deb", "setpriv", "adduser"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed", b)
		}
	}
	if exec.Command("dpkg", "-s", "sonde").Run() == nil {
		t.Skip("a sonde package is installed already: not touching it")
	}
	if _, err := os.Stat("/var/lib/sonde"); err == nil {
		t.Skip("/var/lib/sonde exists already: not touching it")
	}
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	deb := filepath.Join(dir, "sonde_0.0~test_amd64.deb")
	run(t, "sh", filepath.Join(root, "contrib/deb/build-deb.sh"), "0.0~test", "amd64", sondeBin, deb)
	t.Cleanup(func() {
		_ = exec.Command("dpkg", "--purge", "sonde").Run()
		_ = os.RemoveAll("/var/lib/sonde")
		_ = exec.Command("deluser", "--system", "sonde").Run()
	})
	if out := run(t, "dpkg-deb", "-c", deb); !strings.Contains(out, "./usr/share/man/man1/sonde.1.gz") {
		t.Errorf("no sonde(1) in the package:\n%s", out)
	}
	run(t, "dpkg", "-i", deb)

	if out := run(t, "stat", "-c", "%U:%G %a", "/var/lib/sonde"); strings.TrimSpace(out) != "sonde:sonde 750" {
		t.Errorf("/var/lib/sonde: %s; want sonde:sonde 750", out)
	}
	// The administrator's configuration: both on loopback, ephemeral port.
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	writeFile(t, "/etc/default/sonde", fmt.Sprintf("SONDE_SERVE_ARGS=\"--addr=%s --udp-addr=127.0.0.1:0 --mbm-addr=off --webrtc-port=off\"\n", addr))
	writeFile(t, "/etc/sonde/monitor.json", fmt.Sprintf(`{"targets": ["%s"], "rate": 10, "listen": "off", "name": "deb"}`, addr))

	serve := unitCommand(t, "/lib/systemd/system/sonde.service")
	monitor := unitCommand(t, "/lib/systemd/system/sonde-monitor.service")
	srv := start(t, serve[0], serve[1:]...)
	defer stop(srv)
	waitTCP(t, addr)
	from := time.Now()
	mon := start(t, monitor[0], monitor[1:]...)
	time.Sleep(6 * time.Second)
	stop(mon)
	to := time.Now()
	stop(srv)

	if n := probes(t, "/var/lib/sonde/monitor.db", from, to); n < 30 {
		t.Errorf("the packaged monitor stored %d probes in 6 s at 10/s; want ≥ 30", n)
	}
	if out := run(t, "stat", "-c", "%U", "/var/lib/sonde/monitor.db"); strings.TrimSpace(out) != "sonde" {
		t.Errorf("monitor.db owned by %s; want sonde (the unit's user)", out)
	}

	run(t, "dpkg", "-r", "sonde")
	if _, err := os.Stat("/usr/bin/sonde"); err == nil {
		t.Error("/usr/bin/sonde still there after dpkg -r")
	}
	if n := probes(t, "/var/lib/sonde/monitor.db", from, to); n < 30 {
		t.Errorf("after dpkg -r: %d probes in the store; the data must stay", n)
	}
}

// unitCommand reads a unit's ExecStart, expands its environment
// (Environment=, then EnvironmentFile=) and returns the command that runs
// it as the unit's user with the unit's ambient capabilities.
func unitCommand(t *testing.T, unit string) []string {
	t.Helper()
	f, err := os.Open(unit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env := map[string]string{}
	var user, exec, caps string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		switch k {
		case "User":
			user = v
		case "ExecStart":
			exec = v
		case "AmbientCapabilities":
			caps = v
		case "Environment":
			ek, ev, _ := strings.Cut(v, "=")
			env[ek] = ev
		case "EnvironmentFile":
			b, err := os.ReadFile(strings.TrimPrefix(v, "-"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if ek, ev, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(ek, "#") {
					env[ek] = strings.Trim(ev, `"`)
				}
			}
		}
	}
	if user == "" || exec == "" {
		t.Fatalf("%s: no User= or ExecStart=", unit)
	}
	var args []string
	for _, w := range strings.Fields(exec) {
		if strings.HasPrefix(w, "$") {
			args = append(args, strings.Fields(env[w[1:]])...)
			continue
		}
		args = append(args, w)
	}
	var capArgs []string
	if caps != "" {
		c := "+" + strings.ToLower(strings.TrimPrefix(caps, "CAP_"))
		capArgs = []string{"--inh-caps=" + c, "--ambient-caps=" + c}
	}
	cmd := append([]string{"setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups"}, capArgs...)
	return append(cmd, args...)
}

func probes(t *testing.T, path string, from, to time.Time) int {
	t.Helper()
	st, err := store.Open(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id, err := st.Monitor(context.Background(), store.Identity{Name: "deb"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := st.Probes(context.Background(), id, from.UnixNano(), to.UnixNano(), func(p model.ProbeSample) error {
		if !p.Lost {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
}
