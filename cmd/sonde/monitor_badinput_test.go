package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/store"
)

// runMonitorFor runs `sonde monitor run` as main does until it returns or
// d has passed (a daemon that keeps probing is stopped as by SIGINT).
func runMonitorFor(d time.Duration, args ...string) (stderr string, code int) {
	cmd := newMonitorRunCmd()
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		errb.WriteString(oneLine(err) + "\n")
	}
	return errb.String(), exitCode(err)
}

// storedProbes counts monitor "home"'s probes of the store's known minute.
func storedProbes(t *testing.T, path string) int {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids, err := st.ListMonitors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := st.Probes(ctx, ids["home"], mrT0, mrT0+60e9, func(model.ProbeSample) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// notReflector answers every datagram with one that no STAMP reflector
// sends, as a DNS server or a game server on the port would.
func notReflector(t *testing.T) string {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			_, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = c.WriteToUDP([]byte("SSH-2.0-not-a-reflector\r\n"), from)
		}
	}()
	return c.LocalAddr().String()
}

// closedPort is a loopback UDP port nothing listens on (an ICMP port
// unreachable answers each probe).
func closedPort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	a := c.LocalAddr().String()
	c.Close()
	return a
}

// TestMonitorBadInput: each bad input of issue #13 gets one clear line
// (a usage error: exit 2; a failure at start, a sonde server that cannot
// be reached or a store of a newer schema: exit 1; a target that does not
// answer, or answers with something else, is no error: the daemon keeps
// probing, records the loss, and says once what is wrong), and the
// store's rows are all still there afterwards. A clock step cannot be made from here without setting
// the host's clock: internal/monitor's TestClockStep injects one and
// checks its one line, event, /status and /metrics.
func TestMonitorBadInput(t *testing.T) {
	dir := t.TempDir()
	db := monitorStore(t) // monitor "home": 600 probes in its first minute
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badProfiles := write("bad-profiles.json", `{"profiles": [{"name": "x", "latency": "5ms"}]}`)
	notJSON := write("not-json.json", "profiles: [x]\n")
	base := []string{"--store", db, "--name", "home", "--listen", "off", "--timeout", "300ms"}
	for _, tc := range []struct {
		name string
		args []string
		run  time.Duration // how long the daemon may run
		code int
		// line is the one line wanted on stderr (a regexp); lines counts
		// how many stderr lines match it (1: said once, however long it
		// ran).
		line string
	}{
		{"unreachable STAMP target", []string{"--target", "stamp://" + closedPort(t)}, 3 * time.Second, 0,
			`stream .*/stamp: no reply to \d+ probes: 127\.0\.0\.1:\d+ unreachable or filtered$`},
		{"unreachable sonde server", []string{"--target", closedPort(t)}, 10 * time.Second, 1,
			`^probe: stream 0 \(stamp\): open monitor session: cannot reach sonde server at 127\.0\.0\.1:\d+: connection refused \(is .sonde serve. running\?\)$`},
		{"target not a reflector", []string{"--target", "stamp://" + notReflector(t)}, 3 * time.Second, 0,
			`stream .*/stamp: \d+ replies came but none matches a probe: 127\.0\.0\.1:\d+ is not a stamp reflector\?$`},
		{"unknown interface", []string{"--target", "stamp://" + closedPort(t), "--interface", "nosuch0"}, 10 * time.Second, 2,
			`^--interface: .*no interface "nosuch0"`},
		{"counters spec invalid", []string{"--target", "stamp://" + closedPort(t), "--counters", "snmp://198.18.0.1"}, 10 * time.Second, 2,
			`^--counters: snmp: want one interface after the host`},
		{"counters agent unreachable", []string{"--target", "stamp://" + closedPort(t), "--counters", "snmp://public@" + closedPort(t) + "/eth0?timeout=200ms"}, 3 * time.Second, 0,
			`--counters: snmp v2c 127\.0\.0\.1:\d+ eth0: connection refused \(nothing listening there\) \(probing goes on; load states are unknown until the counters are readable\)$`},
		{"profile file missing", []string{"--target", "stamp://" + closedPort(t), "--profiles", filepath.Join(dir, "none.json")}, 10 * time.Second, 2,
			`^--profiles: .*no such file or directory$`},
		{"profile file invalid", []string{"--target", "stamp://" + closedPort(t), "--profiles", badProfiles}, 10 * time.Second, 2,
			`^--profiles .*bad-profiles\.json: .*profile 1 \("x"\): missing reliability$`},
		{"probe interval 0", []string{"--target", "stamp://" + closedPort(t), "--probe-interval", "0"}, 10 * time.Second, 2,
			`^--probe-interval: want 10ms to 1s \(100 to 1 probes/s per stream\), got 0s$`},
		{"timeout 0", []string{"--target", "stamp://" + closedPort(t), "--timeout", "0"}, 10 * time.Second, 2,
			`^--timeout: want 1ms to 1m0s, got 0s$`},
		{"profile file not JSON", []string{"--target", "stamp://" + closedPort(t), "--profiles", notJSON}, 10 * time.Second, 2,
			`^--profiles .*not-json\.json: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, code := runMonitorFor(tc.run, append(append([]string{}, base...), tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			re := regexp.MustCompile(tc.line)
			n := 0
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				if re.MatchString(l) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d lines match %q, want 1; stderr:\n%s", n, tc.line, stderr)
			}
			if tc.code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("more than one line:\n%s", stderr)
			}
			if got := storedProbes(t, db); got != 600 {
				t.Errorf("%d of the 600 stored probes left", got)
			}
		})
	}

	// A database a newer sonde migrated: refused in one line (exit 1: the
	// flag is right, the database is not this sonde's), not touched.
	t.Run("database from a newer schema", func(t *testing.T) {
		newer := monitorStore(t)
		sdb, err := sql.Open("sqlite", "file:"+newer)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sdb.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`, store.SchemaVersion()+5, true); err != nil {
			t.Fatal(err)
		}
		sdb.Close()
		sum := func() [32]byte {
			b, err := os.ReadFile(newer)
			if err != nil {
				t.Fatal(err)
			}
			return sha256.Sum256(b)
		}
		before := sum()
		stderr, code := runMonitorFor(10*time.Second, "--store", newer, "--name", "home", "--listen", "off", "--target", "stamp://"+closedPort(t))
		if code != 1 || !regexp.MustCompile(`^.*database schema is newer than this sonde: the database is at schema version \d+, this sonde knows up to \d+: use a newer sonde\n$`).MatchString(stderr) {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		if sum() != before {
			t.Error("the newer database was written to")
		}
	})
}
