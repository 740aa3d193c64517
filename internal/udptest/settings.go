package udptest

import (
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/units"
)

// Settings are the settings of a run as a user writes them (`sonde udp`'s
// flags, named in the errors); Apply reads them into Options.
type Settings struct {
	Preset  string // "" or voice (VoiceProfile)
	DSCP    string // a number 0-63 or a name
	ECN     string // 0-3 or not-ect, ect1, ect0, ce
	Classes string // dscp.ParseSourceClasses's list; "" for none
}

// Apply sets o from s and bounds o's duration, interval and timeout.
// given tells which settings the user gave (by flag name: probe-interval
// or its old spelling interval, size, dscp), which a preset does not
// override. The first error is returned, in one line led by its flag.
func (s Settings) Apply(o *Options, given func(string) bool) error {
	switch s.Preset {
	case "":
	case "voice":
		keep := *o
		o.VoiceProfile()
		if given("probe-interval") || given("interval") {
			o.Interval = keep.Interval
		}
		if given("size") {
			o.PacketBytes = keep.PacketBytes
		}
	default:
		return fmt.Errorf("--preset: want voice, got %q", s.Preset)
	}
	if given("dscp") || s.Preset == "" {
		v, err := dscp.Parse(s.DSCP)
		if err != nil {
			return fmt.Errorf("--dscp: %w", err)
		}
		o.DSCP = v
	}
	v, err := dscp.ParseECN(s.ECN)
	if err != nil {
		return fmt.Errorf("--ecn: %w", err)
	}
	o.ECN = v
	if s.Classes != "" {
		cs, err := dscp.ParseSourceClasses(s.Classes)
		if err != nil {
			return fmt.Errorf("--classes: %w", err)
		}
		o.Classes = cs
	}
	if err := units.CheckDuration("--duration", o.Duration, time.Millisecond, 24*time.Hour); err != nil {
		return err
	}
	if err := units.CheckDuration("--probe-interval", o.Interval, 100*time.Microsecond, 24*time.Hour); err != nil {
		return err
	}
	return units.CheckDuration("--timeout", o.Timeout, time.Millisecond, time.Minute)
}
