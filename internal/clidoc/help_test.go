package clidoc

import "testing"

func TestExitHelp(t *testing.T) {
	got := ExitHelp([]ExitCode{{0, "success"}, {2, "usage"}})
	if want := "Exit status:\n  0  success\n  2  usage"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
