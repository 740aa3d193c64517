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
}

// Parse reads the rate into the inputs. A truncation factor of 0 is
// refused here, where it was given: NewPlan takes 0 for its default.
func (s Settings) Parse() (Inputs, error) {
	in := s.Inputs
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
