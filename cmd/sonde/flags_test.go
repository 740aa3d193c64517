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
