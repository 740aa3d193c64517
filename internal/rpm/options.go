package rpm

import (
	"errors"
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/units"
)

// SetDirection runs only the direction named ("download" or "upload"),
// or both, download first, for "" (sonde rpm's --direction).
func (o *ClientOptions) SetDirection(only string) error {
	switch only {
	case "":
		o.Directions = nil
	case "download", "upload":
		o.Directions = []string{only}
	default:
		return fmt.Errorf("--direction: want download or upload, got %q", only)
	}
	return nil
}

// Check bounds the options as sonde rpm's flags, named in the errors,
// and checks the URL; zero values are not taken for the defaults here.
func (o *ClientOptions) Check() error {
	if _, err := ConfigURL(o.URL); err != nil {
		return err
	}
	return errors.Join(units.CheckDuration("--interval", o.Interval, 100*time.Millisecond, 10*time.Second),
		units.CheckDuration("--max-duration", o.MaxDuration, time.Second, 5*time.Minute),
		units.CheckDuration("--probe-interval", o.ProbeInterval, 10*time.Millisecond, 10*time.Second),
		units.CheckCount("--max-flows", o.MaxFlows, 1, 64))
}
