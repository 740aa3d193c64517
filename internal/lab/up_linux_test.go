package lab

import (
	"math"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestWithoutDetach: the background child of lab up --detach gets every
// argument but --detach, in each of its spellings.
func TestWithoutDetach(t *testing.T) {
	for in, want := range map[string]string{
		"lab up wire --detach --seed 3": "lab up wire --seed 3",
		"lab up -d wire":                "lab up wire",
		"lab up --detach=true x.json":   "lab up x.json",
		"lab up wire --detached-child":  "lab up wire --detached-child",
	} {
		if got := strings.Join(WithoutDetach(strings.Fields(in)), " "); got != want {
			t.Errorf("WithoutDetach(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestTestClientArgs: sonde test in a lab gets the lab's rates and no
// layer 2 overhead, unless given; an unlimited rate is no rate.
func TestTestClientArgs(t *testing.T) {
	truth := model.GroundTruth{DownRateBps: 8e6, UpRateBps: 0.7e6}
	none := func(string) bool { return false }
	if got := strings.Join(TestClientArgs(truth, none), " "); got != "--link-rate 8000000 --up-link-rate 700000 --wire-overhead 0" {
		t.Errorf("got %s", got)
	}
	if got := strings.Join(TestClientArgs(truth, func(f string) bool { return f == "link-rate" }), " "); got != "--wire-overhead 0" {
		t.Errorf("--link-rate given: %s", got)
	}
	if got := strings.Join(TestClientArgs(model.GroundTruth{DownRateBps: math.Inf(1)}, none), " "); got != "--wire-overhead 0" {
		t.Errorf("unlimited: %s", got)
	}
}
