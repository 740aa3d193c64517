package monitor

import (
	"errors"
	"fmt"
	"github.com/sonde-project/sonde/internal/memlimit"
	"io"
	"time"

	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/units"
)

// Flags are `sonde monitor run`'s settings as given: the fields its flags
// set directly (Config), the config file, and the flags read here.
type Flags struct {
	Config
	File                string        // --config ("": none)
	Timeout             time.Duration // --timeout
	ProbeInterval       time.Duration // --probe-interval
	KeepRaw, KeepRollup string        // --keep-raw, --keep-rollups (units.ParseAge)
	Labels              []string      // --label key=value
	// Given tells whether a flag was given (by its name or, for a
	// renamed flag, its old spelling's).
	Given func(flag string) bool
}

// Plan merges the config file (its deprecated keys noted on warn), the
// flags given over it, and the defaults, and validates the result: one
// plan, or one line of error about the settings.
func (f Flags) Plan(warn io.Writer) (*Plan, error) {
	c := f.Config
	if f.File != "" {
		fc, err := LoadConfig(f.File)
		if err != nil {
			return nil, err
		}
		for _, d := range fc.Deprecated {
			fmt.Fprintf(warn, "sonde: %s: %s\n", f.File, d)
		}
		fc.Override(f.Config, f.Given)
		c = fc
	}
	for _, kv := range []struct {
		flag string
		dst  *units.Duration
		val  string
	}{{"keep-raw", &c.KeepRaw, f.KeepRaw}, {"keep-rollups", &c.KeepRoll, f.KeepRollup}} {
		if f.Given(kv.flag) {
			d, err := units.ParseAge(kv.val)
			if err != nil {
				return nil, fmt.Errorf("--%s: %s", kv.flag, err)
			}
			*kv.dst = units.Duration(d)
		}
	}
	if f.Given("label") {
		l, err := store.ParseLabels(f.Labels)
		if err != nil {
			return nil, fmt.Errorf("--label: %s", err)
		}
		c.Labels = l
	}
	c.Defaults()
	// Given after the defaults: a 0 on the command line is a value to
	// refuse, not an unset field.
	if f.Given("timeout") {
		c.Timeout = units.Duration(f.Timeout)
	}
	// --probe-interval, or its deprecated spelling --rate (probes/s: a
	// bit rate everywhere else), over the file's.
	switch {
	case f.Given("probe-interval") && f.Given("rate"):
		return nil, errors.New("--rate is the deprecated spelling of --probe-interval: give one")
	case f.Given("probe-interval"):
		c.ProbeInterval, c.Rate = units.Duration(f.ProbeInterval), 0
	case f.Given("rate"):
		c.ProbeInterval, c.Rate = 0, f.Config.Rate
	}
	return c.Validate()
}

// MinMemoryLimit is the lowest --memory-limit taken: near the Go memory
// the daemon needs in steady state (about 17 MiB at 1 × 100/s or 8 × 10/s,
// docs/monitor.md "Memory") the GC would run back to back for nothing.
const MinMemoryLimit = 24 << 20

// ParseMemoryLimit reads --memory-limit, the Go runtime's soft memory
// limit: a size of at least MinMemoryLimit, or off (0).
func ParseMemoryLimit(s string) (int64, error) { return memlimit.Parse(s, MinMemoryLimit) }
