package lab

import (
	"strings"
	"testing"
	"time"
)

// TestEmulationSettings: sonde emulate's flags are checked before any
// device is made, each bad one a line naming it.
func TestEmulationSettings(t *testing.T) {
	good := func() EmulationSettings {
		return EmulationSettings{Emulation: Emulation{NSA: "a", NSB: "b", MTU: 1500}, AddrA: "198.18.1.1/24", AddrB: "198.18.1.2/24",
			ICMPFrom: "198.18.1.254", Link: "rate=20Mbit delay=10ms"}
	}
	for _, c := range []struct {
		edit func(*EmulationSettings)
		want string
	}{
		{func(s *EmulationSettings) { s.Link = "rate=fast" }, ""},
		{func(s *EmulationSettings) { s.NSB = "a" }, "emulate: --ns-a and --ns-b must name two different network namespaces"},
		{func(s *EmulationSettings) { s.AddrB = "198.18.1.2" }, "emulate: "},
		{func(s *EmulationSettings) { s.ICMPFrom = "x" }, "emulate: --icmp-from: "},
		{func(s *EmulationSettings) { s.Stats = 25 * time.Hour }, "--stats: want 0s to 24h, got 25h"},
		{func(s *EmulationSettings) { s.Spin = 2 * time.Second }, "--spin: want 0s to 1s, got 2s"},
	} {
		s := good()
		c.edit(&s)
		if _, err := s.Check(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", s, err, c.want)
		}
	}
	e, err := good().Check()
	if err != nil || e.AddrA.String() != "198.18.1.1/24" || e.ICMPFrom.String() != "198.18.1.254" || e.Up.Params.RateBps != 20e6 {
		t.Errorf("%+v, %v", e, err)
	}
}
