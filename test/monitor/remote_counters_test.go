//go:build linux

package monitor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/lab"
)

// TestRemoteCounters: the monitor on a box behind the gateway (the lab's
// client) labels load states from the gateway's counters (the lab's
// router), read over SNMP from Debian's snmpd and from Debian's
// prometheus-node-exporter running in the router's namespace. Cross
// traffic through the router's access link (link 2, whose rates the
// emulator sets: the ground truth) is idle, a steady half of a direction's
// rate (loaded), or saturating; each direction's label on the monitor's
// /status must follow it.
func TestRemoteCounters(t *testing.T) {
	needLab(t)
	for _, bin := range []string{"/usr/sbin/snmpd", "/usr/bin/prometheus-node-exporter", "/usr/bin/curl"} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("%s not installed (make apt-deps)", bin)
		}
	}
	const upBps, downBps = 8e6, 16e6
	prof, err := lab.Scenario{Name: "sondegw", Links: []lab.ScenarioLink{
		{Name: "lan", Both: "rate=200Mbit delay=1ms limit=1000p"},
		{Name: "access", Both: "delay=10ms limit=200p", Up: fmt.Sprintf("rate=%gbit", upBps), Down: fmt.Sprintf("rate=%gbit", downBps)},
	}}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: t.TempDir(), profile: prof, truth: prof.GroundTruth()}
	l := upLab(t, prof, 21)
	r.lab = l
	router := "router-1"
	lanAddr, err := l.AddrOn(router, 1) // the router's address on the LAN (link 1)
	if err != nil {
		t.Fatal(err)
	}
	wan := deviceWith(t, l, router, "198.18.2.1") // its end of the access link
	r.background(lab.Server, "sonde serve", sondeBin, "serve", "--addr", fmt.Sprintf("%s:%d", l.ServerAddr(), sondePort))
	r.background(lab.Server, "iperf3 -s", "iperf3", "-s", "-B", l.ServerAddr(), "-p", strconv.Itoa(iperfPort))
	conf := filepath.Join(r.dir, "snmpd.conf")
	if err := os.WriteFile(conf, []byte("agentAddress udp:"+lanAddr+":161\nrocommunity sondegw 198.18.0.0/15\n"+
		"createUser sondeuser SHA \"authpass123\" AES \"privpass123\"\nrouser sondeuser priv\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.background(router, "snmpd", "env", "SNMP_PERSISTENT_DIR="+filepath.Join(r.dir, "snmp"), "MIBS=",
		"/usr/sbin/snmpd", "-f", "-Lf", filepath.Join(r.dir, "snmpd.out"), "-C", "-c", conf, "-p", filepath.Join(r.dir, "snmpd.pid"))
	r.background(router, "node exporter", "/usr/bin/prometheus-node-exporter", "--web.listen-address="+lanAddr+":9100",
		"--collector.disable-defaults", "--collector.netdev")
	waitTCP(t, l, fmt.Sprintf("%s:%d", l.ServerAddr(), sondePort))
	waitTCP(t, l, lanAddr+":9100")

	// Both sources are read at once, by two monitors in the client's
	// namespace, through the same phases of cross traffic.
	type source struct{ name, spec, listen string }
	sources := []source{
		{"snmp v3", fmt.Sprintf("snmp://sondeuser@%s/%s?version=3&auth=SHA&auth-pass=authpass123&priv=AES&priv-pass=privpass123&interval=500ms", lanAddr, wan), ""},
		{"node exporter", fmt.Sprintf("node-exporter://%s:9100/metrics?device=%s&interval=500ms", lanAddr, wan), ""},
	}
	var listens []string
	for i := range sources {
		c := &sources[i]
		c.listen = fmt.Sprintf("%s:%d", l.ClientAddr(), 9851+i)
		listens = append(listens, c.listen)
		r.background(lab.Client, "sonde monitor run ("+c.name+")", sondeBin, "monitor", "run",
			"--target", fmt.Sprintf("%s:%d", l.ServerAddr(), sondePort), "--probe-interval", "200ms",
			"--counters", c.spec, "--up-link-rate", strconv.FormatFloat(upBps, 'f', -1, 64), "--down-link-rate", strconv.FormatFloat(downBps, 'f', -1, 64),
			"--store", filepath.Join(r.dir, fmt.Sprintf("m%d.db", i)), "--listen", c.listen, "--name", "gw")
	}
	// A warm-up load lets the tracker find the source's effective
	// resolution: net-snmp refreshes IF-MIB from a cache about every 3 s,
	// the node exporter reads /proc/net/dev afresh. Each phase then waits
	// for three resolutions of the coarser source (the window is two)
	// before its labels are read.
	time.Sleep(2 * time.Second)
	r.phaseStates(listens, []string{"-C", "cubic"}, 18*time.Second)
	settle := 3 * time.Second
	for _, c := range sources {
		res := r.resolution(c.listen)
		t.Logf("%s: effective resolution %v", c.name, res)
		settle = max(settle, 3*res)
	}
	type phase struct {
		what     string
		args     []string // iperf3 client arguments ("" for none)
		up, down string
	}
	for _, p := range []phase{
		{"idle", nil, "idle", "idle"},
		{"half the uplink", []string{"-u", "-b", strconv.FormatFloat(upBps/2, 'f', 0, 64), "-l", "1200"}, "loaded", "idle"},
		{"saturated uplink", []string{"-C", "cubic"}, "saturated", "idle"},
		{"half the downlink", []string{"-R", "-u", "-b", strconv.FormatFloat(downBps/2, 'f', 0, 64), "-l", "1200"}, "idle", "loaded"},
		{"saturated downlink", []string{"-R", "-C", "cubic"}, "idle", "saturated"},
	} {
		states := r.phaseStates(listens, p.args, settle)
		// The majority of the phase's middle readings must say it; the
		// acknowledgements of a saturating download are a few % of the
		// uplink: idle.
		for i, c := range sources {
			if st := states[i]; st.up != p.up || st.down != p.down {
				t.Errorf("%s, %s: up %s, down %s; want up %s, down %s (ground truth: up %g, down %g bit/s)",
					c.name, p.what, st.up, st.down, p.up, p.down, upBps, downBps)
			}
		}
	}
}

// resolution is the counters' effective resolution on /status.
func (r *rig) resolution(listen string) time.Duration {
	out, err := r.lab.Command(context.Background(), lab.Client, "curl", "-s", "-m", "2", "http://"+listen+"/status").Output()
	var st struct {
		Load *struct {
			ResolutionMs float64 `json:"resolution_ms"`
		} `json:"load"`
	}
	if err != nil || json.Unmarshal(out, &st) != nil || st.Load == nil {
		r.t.Fatalf("/status: %v %s", err, out)
	}
	return time.Duration(st.Load.ResolutionMs * 1e6)
}

// upDown is a monitor's load state per direction.
type upDown struct{ up, down string }

// phaseStates runs iperf3 with args (none: idle) for settle + 5 s and
// returns, for each monitor's /status at listens, the most frequent
// per-direction labels over its last 5 s, then waits for the window and
// hold to pass.
func (r *rig) phaseStates(listens []string, args []string, settle time.Duration) []upDown {
	r.t.Helper()
	var ip *exec.Cmd
	if args != nil {
		a := append([]string{"-c", r.lab.ServerAddr(), "-p", strconv.Itoa(iperfPort), "-t", strconv.Itoa(int((settle + 6*time.Second).Seconds()))}, args...)
		ip = r.lab.Command(context.Background(), lab.Client, "iperf3", a...)
		if err := ip.Start(); err != nil {
			r.t.Fatal(err)
		}
	}
	time.Sleep(settle)
	ups, downs := make([]map[string]int, len(listens)), make([]map[string]int, len(listens))
	for k := range listens {
		ups[k], downs[k] = map[string]int{}, map[string]int{}
	}
	for i := 0; i < 10; i++ {
		time.Sleep(500 * time.Millisecond)
		for k, listen := range listens {
			out, err := r.lab.Command(context.Background(), lab.Client, "curl", "-s", "-m", "2", "http://"+listen+"/status").Output()
			if err != nil {
				continue
			}
			var st struct {
				Load *struct{ Up, Down, State string } `json:"load"`
			}
			if json.Unmarshal(out, &st) != nil || st.Load == nil {
				continue
			}
			ups[k][st.Load.Up]++
			downs[k][st.Load.Down]++
		}
	}
	most := func(m map[string]int) string {
		best, n := "no status", 0
		for k, v := range m {
			if v > n {
				best, n = k, v
			}
		}
		return best
	}
	if ip != nil {
		_ = ip.Wait()
	}
	time.Sleep(settle) // the window and hold after the load
	states := make([]upDown, len(listens))
	for k := range listens {
		states[k] = upDown{most(ups[k]), most(downs[k])}
	}
	return states
}

// deviceWith is the name of node's device holding addr.
func deviceWith(t *testing.T, l *lab.Lab, node, addr string) string {
	t.Helper()
	out, err := l.Command(context.Background(), node, "ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("%s: ip addr: %v", node, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && strings.HasPrefix(f[3], addr+"/") {
			return f[1]
		}
	}
	t.Fatalf("%s: no device with %s in\n%s", node, addr, out)
	return ""
}
