package tcptest

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sonde-project/sonde/internal/dscp"
	"github.com/sonde-project/sonde/internal/units"
)

// Settings are the settings of a test as a user writes them (`sonde
// test`'s flags, named in the errors); Apply reads them into a Config.
// A library caller with typed values sets the Config's fields and calls
// Apply with empty Settings, for the same bounds.
type Settings struct {
	Streams    string // a count, or auto ("" too)
	DSCP       string // a number 0-63 or a name; "" for none
	Classes    string // dscp.ParseClasses's list; "" for none
	LinkRate   string // units.ParseRate; "" for unknown
	UpLinkRate string // the upload's when it differs
	Direction  string // SetDirection's names; "" keeps c's phases
}

// Apply bounds c's duration, stream counts, baseline samples, wire
// overhead (0 becomes -1: none, as on the lab's IP-level links) and probe
// interval, and sets the fields s names. deprecated tells a deprecated
// --direction name (both), even beside an error. The first error is
// returned, in one line led by its flag.
func (s Settings) Apply(c *Config) (deprecated bool, err error) {
	c.DSCP = -1
	if err := units.CheckDuration("--duration", c.Duration, time.Second, time.Hour); err != nil {
		return false, err
	}
	switch s.Streams {
	case "auto", "":
		c.Streams = 0
	default:
		n, err := strconv.Atoi(s.Streams)
		if err != nil || n < 1 {
			return false, fmt.Errorf("--streams: want a positive count or auto, got %q", s.Streams)
		}
		c.Streams = n
	}
	if err := units.CheckCount("--max-streams", c.MaxStreams, 1, 128); err != nil {
		return false, err
	}
	if err := units.CheckCount("--baseline-samples", c.BaselineSamples, 20, 10000); err != nil {
		return false, err
	}
	if s.Direction != "" {
		if deprecated, err = c.SetDirection(s.Direction); err != nil {
			return false, err
		}
	}
	if s.DSCP != "" {
		v, err := dscp.Parse(s.DSCP)
		if err != nil {
			return deprecated, fmt.Errorf("--dscp: %w", err)
		}
		c.DSCP = v
	}
	if s.Classes != "" {
		cs, err := dscp.ParseClasses(s.Classes)
		if err != nil {
			return deprecated, fmt.Errorf("--classes: %w", err)
		}
		c.Classes = cs
	}
	for _, lr := range []struct {
		flag, value string
		dst         *float64
	}{{"--link-rate", s.LinkRate, &c.LinkRateBps}, {"--up-link-rate", s.UpLinkRate, &c.UpLinkRateBps}} {
		if lr.value == "" {
			continue
		}
		r, err := units.ParseRate(lr.value)
		if err == nil && r == 0 {
			err = errors.New("a link rate must be above 0")
		}
		if err != nil {
			return deprecated, fmt.Errorf("%s: %w", lr.flag, err)
		}
		*lr.dst = r
	}
	if c.WireOverhead < 0 || c.WireOverhead > 1000 {
		return deprecated, fmt.Errorf("--wire-overhead: want 0-1000 bytes, got %d", c.WireOverhead)
	}
	if c.WireOverhead == 0 {
		c.WireOverhead = -1 // the client's zero value means Ethernet
	}
	return deprecated, units.CheckDuration("--probe-interval", c.ProbeInterval, time.Millisecond, 50*time.Millisecond)
}
