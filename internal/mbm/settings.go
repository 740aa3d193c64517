package mbm

import (
	"errors"
	"fmt"

	"github.com/sonde-project/sonde/internal/units"
)

// Settings are a plan's inputs as a user writes them (`sonde mbm`'s
// flags, named in the errors): the target rate as text, the rest typed.
type Settings struct {
	Rate string // units.ParseRate: "10M", "1.5Gbit/s"
	Inputs
	// RTTGiven says --rtt was given (it has no default); ForPlan that
	// the settings are for --plan, which the errors name.
	RTTGiven, ForPlan bool
}

// Parse reads the rate into the inputs. A truncation factor of 0 is
// refused here, where it was given: NewPlan takes 0 for its default.
func (s Settings) Parse() (Inputs, error) {
	in := s.Inputs
	if s.Rate == "" || !s.RTTGiven {
		if s.ForPlan {
			return in, errors.New("--plan needs --rate and --rtt")
		}
		return in, errors.New("a run needs --rate and --rtt")
	}
	rate, err := units.ParseRate(s.Rate)
	if err != nil {
		return in, fmt.Errorf("--rate: %w", err)
	}
	in.RateBps = rate
	if in.TruncFactor == 0 {
		return in, errors.New("--trunc-factor: want 1 to 100, got 0")
	}
	return in, nil
}

// Plan is the plan of the settings (Parse, then NewPlan).
func (s Settings) Plan() (Plan, error) {
	in, err := s.Parse()
	if err != nil {
		return Plan{}, err
	}
	return NewPlan(in)
}
