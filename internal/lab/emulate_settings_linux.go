package lab

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/units"
)

// EmulationSettings are the settings of `sonde emulate` as a user writes
// them (its flags, named in the errors): the typed ones in Emulation, the
// addresses and the link specifications (emulator.ParseLink) as text.
type EmulationSettings struct {
	Emulation
	AddrA, AddrB, ICMPFrom string
	Link, Up, Down         string
	At, UpAt, DownAt       []string
}

// Check reads s into an Emulation; every error is one line, the user's
// to fix, found before any device is made.
func (s EmulationSettings) Check() (Emulation, error) {
	e := s.Emulation
	var err error
	if e.Up, e.Down, err = emulator.ParseLink(s.Link, s.Up, s.Down, s.At, s.UpAt, s.DownAt); err != nil {
		return e, err
	}
	if e.NSA == "" || e.NSB == "" || e.NSA == e.NSB {
		return e, errors.New("emulate: --ns-a and --ns-b must name two different network namespaces")
	}
	var errA, errB error
	e.AddrA, errA = netip.ParsePrefix(s.AddrA)
	e.AddrB, errB = netip.ParsePrefix(s.AddrB)
	if err := errors.Join(errA, errB); err != nil {
		return e, fmt.Errorf("emulate: %w", err)
	}
	if e.ICMPFrom, err = netip.ParseAddr(s.ICMPFrom); err != nil {
		return e, fmt.Errorf("emulate: --icmp-from: %w", err)
	}
	return e, errors.Join(units.CheckDuration("--stats", e.Stats, 0, 24*time.Hour),
		units.CheckDuration("--duration", e.Duration, 0, 365*24*time.Hour), units.CheckDuration("--spin", e.Spin, 0, time.Second))
}
