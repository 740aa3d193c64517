package udptest

import (
	"strings"
	"testing"
	"time"
)

// TestSettingsApply: sonde udp's parsers and bounds for any caller of
// Options; the voice preset keeps what the user gave.
func TestSettingsApply(t *testing.T) {
	good := func() Options {
		return Options{Duration: 10 * time.Second, Interval: 20 * time.Millisecond, PacketBytes: 64, Timeout: DefaultTimeout}
	}
	none := func(string) bool { return false }
	for _, c := range []struct {
		name string
		s    Settings
		edit func(*Options)
		want string
	}{
		{"preset", Settings{Preset: "video", DSCP: "0", ECN: "0"}, nil, `--preset: want voice, got "video"`},
		{"dscp", Settings{DSCP: "64", ECN: "0"}, nil, "--dscp: "},
		{"ecn", Settings{DSCP: "0", ECN: "5"}, nil, "--ecn: "},
		{"classes", Settings{DSCP: "0", ECN: "0", Classes: "ef"}, nil, "--classes: "},
		{"duration", Settings{DSCP: "0", ECN: "0"}, func(o *Options) { o.Duration = 25 * time.Hour }, "--duration: want 1ms to 24h, got 25h"},
		{"interval", Settings{DSCP: "0", ECN: "0"}, func(o *Options) { o.Interval = time.Microsecond }, "--probe-interval: want 100µs to 24h, got 1µs"},
		{"timeout", Settings{DSCP: "0", ECN: "0"}, func(o *Options) { o.Timeout = 2 * time.Minute }, "--timeout: want 1ms to 1m, got 2m"},
	} {
		o := good()
		if c.edit != nil {
			c.edit(&o)
		}
		if err := c.s.Apply(&o, none); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	o := good()
	if err := (Settings{Preset: "voice", DSCP: "0", ECN: "ect0"}).Apply(&o, func(f string) bool { return f == "size" }); err != nil {
		t.Fatal(err)
	}
	if !o.Voice || o.Interval != VoiceInterval || o.PacketBytes != 64 || o.DSCP != VoiceDSCP || o.ECN != 2 {
		t.Errorf("voice with --size given: %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}
