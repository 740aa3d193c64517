package query

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingsApply: monitor report's flags checked into a Request before
// the store is opened.
func TestSettingsApply(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{Thresholds: "fast"}, "--threshold: "},
		{Settings{ProfilesFile: filepath.Join(t.TempDir(), "none.json")}, "--profiles "},
		{Settings{Up: "0"}, "--up-link-rate: a capacity of "},
		{Settings{Down: "20T"}, "--down-link-rate: a capacity of 20.00 Tbit/s: want more than 0, at most 10 Tbit/s"},
		{Settings{Down: "x"}, "--down-link-rate: "},
	} {
		var req Request
		if err := c.s.Apply(&req); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	var req Request
	if err := (Settings{Thresholds: "30ms,1s", Up: "700k", Down: "8M"}).Apply(&req); err != nil {
		t.Fatal(err)
	}
	if len(req.Config.ThresholdsNs) != 2 || req.Config.ThresholdsNs[0] != 30e6 || req.UpBps != 700e3 || req.DownBps != 8e6 {
		t.Errorf("%+v", req)
	}
}
