package tcptest

import (
	"testing"
	"time"
)

// TestSettingsApply: sonde test's bounds and parsers, for any caller of a
// Config: each bad setting is one error led by its flag; good ones fill
// the Config.
func TestSettingsApply(t *testing.T) {
	good := func() Config {
		return Config{Duration: 10 * time.Second, MaxStreams: 16, BaselineSamples: 30, WireOverhead: 38, ProbeInterval: 20 * time.Millisecond}
	}
	for _, c := range []struct {
		name string
		s    Settings
		edit func(*Config)
		want string
	}{
		{"short", Settings{}, func(c *Config) { c.Duration = time.Millisecond }, "--duration: want 1s to 1h, got 1ms"},
		{"streams", Settings{Streams: "0"}, nil, `--streams: want a positive count or auto, got "0"`},
		{"max-streams", Settings{}, func(c *Config) { c.MaxStreams = 129 }, "--max-streams: want 1 to 128, got 129"},
		{"baseline", Settings{}, func(c *Config) { c.BaselineSamples = 19 }, "--baseline-samples: want 20 to 10000, got 19"},
		{"direction", Settings{Direction: "sideways"}, nil, `--direction: want sequential, download, upload, bidir or all, got "sideways"`},
		{"dscp", Settings{DSCP: "64"}, nil, "--dscp: "},
		{"classes", Settings{Classes: "ef"}, nil, "--classes: "},
		{"link-rate", Settings{LinkRate: "0"}, nil, "--link-rate: a link rate must be above 0"},
		{"up-link-rate", Settings{UpLinkRate: "fast"}, nil, "--up-link-rate: "},
		{"overhead", Settings{}, func(c *Config) { c.WireOverhead = 1001 }, "--wire-overhead: want 0-1000 bytes, got 1001"},
		{"probe", Settings{}, func(c *Config) { c.ProbeInterval = 51 * time.Millisecond }, "--probe-interval: want 1ms to 50ms, got 51ms"},
	} {
		cfg := good()
		if c.edit != nil {
			c.edit(&cfg)
		}
		_, err := c.s.Apply(&cfg)
		if err == nil || len(err.Error()) < len(c.want) || err.Error()[:len(c.want)] != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	cfg := good()
	cfg.WireOverhead = 0
	dep, err := Settings{Streams: "4", DSCP: "ef", LinkRate: "100M", UpLinkRate: "20M", Direction: "both"}.Apply(&cfg)
	if err != nil || !dep {
		t.Fatalf("%v, deprecated %v; want nil, true", err, dep)
	}
	if cfg.Streams != 4 || cfg.DSCP != 46 || cfg.LinkRateBps != 100e6 || cfg.UpLinkRateBps != 20e6 || cfg.WireOverhead != -1 || !cfg.Download || !cfg.Upload || cfg.Bidir {
		t.Errorf("applied %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}
