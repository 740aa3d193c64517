package query

import (
	"fmt"

	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Settings are a report's question beyond the monitor and the range, as a
// user writes it (`monitor report`'s flags, named in the errors).
type Settings struct {
	Thresholds   string // reliability.ParseThresholds's list; "": the default
	ProfilesFile string // requirement profiles; "": the smart-grid table
	Up, Down     string // capacities overriding the recorded ones (ParseCapacity)
}

// Apply checks s and sets req's analysis configuration and capacities:
// each error is one line, before the store is opened.
func (s Settings) Apply(req *Request) error {
	var err error
	if s.Thresholds != "" {
		if req.Config.ThresholdsNs, err = reliability.ParseThresholds(s.Thresholds); err != nil {
			return fmt.Errorf("--threshold: %w", err)
		}
	}
	if s.ProfilesFile != "" {
		if req.Config.Profiles, err = reliability.ReadProfilesFile(s.ProfilesFile); err != nil {
			return fmt.Errorf("--profiles %s: %w", s.ProfilesFile, err)
		}
	}
	if _, err := reliability.New(req.Config, nil); err != nil {
		return err
	}
	if req.UpBps, err = ParseCapacity("--up-link-rate", s.Up); err != nil {
		return err
	}
	req.DownBps, err = ParseCapacity("--down-link-rate", s.Down)
	return err
}

// ParseCapacity reads an optional capacity override (flag names it in
// the error): "" is 0 (the recorded one), else a rate above 0 and at most
// store.MaxCapacityBps.
func ParseCapacity(flag, s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := units.ParseRate(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", flag, err)
	}
	if v <= 0 || v > store.MaxCapacityBps {
		return 0, fmt.Errorf("%s: a capacity of %s: want more than 0, at most 10 Tbit/s", flag, units.FormatRate(v))
	}
	return v, nil
}
