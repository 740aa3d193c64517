package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDeprecatedAliases: every renamed flag's old spelling still sets the
// flag for one release and names its replacement on stderr (one flag
// name, one meaning across commands).
func TestDeprecatedAliases(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args     []string
		old, new string
		code     int
	}{
		{[]string{"store", "migrate", "--store", filepath.Join(dir, "x.db"), "--timeout", "0s"}, "timeout", "deadline", exitUsage},
		{[]string{"fleet", "report", "--store", filepath.Join(dir, "f.db"), "--timeout", "0s"}, "timeout", "deadline", exitUsage},
		{[]string{"monitor", "report", "--store", filepath.Join(dir, "m.db"), "--timeout", "0s"}, "timeout", "deadline", exitUsage},
		{[]string{"udp", "127.0.0.1:9", "--profile", "video"}, "profile", "preset", exitUsage},
		{[]string{"mbm", "--plan", "--rate", "10M", "--rtt", "20ms", "--ecn=false"}, "ecn", "ect", 0},
		// One name, one meaning: --rate is a bit rate (sonde mbm), --up and
		// --down link specifications (sonde emulate); the monitor's probe
		// frequency is an interval as in test, rpm and udp, its capacities
		// the --*-link-rate of sonde test.
		{[]string{"monitor", "run", "--target", "stamp://198.18.0.1", "--rate", "1000"}, "rate", "probe-interval", exitUsage},
		{[]string{"monitor", "run", "--target", "stamp://198.18.0.1", "--up", "fast", "--interface", "lo"}, "up", "up-link-rate", exitUsage},
		{[]string{"monitor", "run", "--target", "stamp://198.18.0.1", "--down", "fast", "--interface", "lo"}, "down", "down-link-rate", exitUsage},
		{[]string{"monitor", "report", "--store", filepath.Join(dir, "m.db"), "--up", "0"}, "up", "up-link-rate", exitUsage},
		{[]string{"monitor", "report", "--store", filepath.Join(dir, "m.db"), "--down", "fast"}, "down", "down-link-rate", exitUsage},
		{[]string{"udp", "127.0.0.1:9", "--interval", "1ns"}, "interval", "probe-interval", exitUsage},
	} {
		// cobra prints the notice with Command.Print: to the output the
		// command was given (here the test's), else to stderr.
		stdout, stderr, code := run(t, c.args...)
		if want := "--" + c.old + " has been deprecated, use --" + c.new + " instead"; !strings.Contains(stdout+stderr, want) || code != c.code {
			t.Errorf("%v: exit %d, output %q %q; want exit %d and %q", c.args, code, stdout, stderr, c.code, want)
		}
		if c.code == exitUsage && !strings.Contains(stderr, "--"+c.new) {
			t.Errorf("%v: the error does not name --%s: %q", c.args, c.new, stderr)
		}
	}
}
