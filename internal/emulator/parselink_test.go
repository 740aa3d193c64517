package emulator

import (
	"strings"
	"testing"
)

// TestParseLink: --link is the base of both directions, --up and --down
// each one's, --at steps both schedules; an error names its flag.
func TestParseLink(t *testing.T) {
	up, down, err := ParseLink("rate=20M delay=10ms", "loss=1%", "", []string{"5s:rate=10M"}, nil, []string{"7s:rate=5M"})
	if err != nil {
		t.Fatal(err)
	}
	if up.Params.RateBps != 20e6 || up.Params.Loss == 0 || down.Params.Loss != 0 || down.Params.Delay != up.Params.Delay || len(up.Schedule) != 1 || len(down.Schedule) != 2 {
		t.Fatalf("up %+v, down %+v", up, down)
	}
	for _, c := range [][3]string{{"rate=x", "", ""}, {"", "loss=200%", ""}, {"", "", "delay=-1s"}} {
		if _, _, err := ParseLink(c[0], c[1], c[2], nil, nil, nil); err == nil || !strings.HasPrefix(err.Error(), "--") {
			t.Errorf("%q: %v", c, err)
		}
	}
}
