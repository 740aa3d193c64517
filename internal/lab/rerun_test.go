package lab

import (
	"strings"
	"testing"
)

// TestWithoutLab: the client re-run gets every argument but --lab and its
// value, in either form.
func TestWithoutLab(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"mbm --lab wire --rate 5M --rtt 20ms", "mbm --rate 5M --rtt 20ms"},
		{"mbm --rate 5M --lab=adsl --json r.json", "mbm --rate 5M --json r.json"},
		{"test -t 5s --lab x.json", "test -t 5s"},
		{"test --laboratory x", "test --laboratory x"},
	} {
		if got := strings.Join(WithoutLab(strings.Fields(c.in)), " "); got != c.want {
			t.Errorf("WithoutLab(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
