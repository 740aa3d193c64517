package lab

import (
	"strings"
	"testing"
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
