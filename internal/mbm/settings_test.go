package mbm

import (
	"testing"
	"time"
)

func TestSettingsParse(t *testing.T) {
	in := Inputs{Target: Target{RTT: 20 * time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: DefaultAlpha, Beta: DefaultBeta, TruncFactor: DefaultTruncFactor}
	got, err := Settings{Rate: "10M", Inputs: in, RTTGiven: true}.Parse()
	if err != nil || got.RateBps != 10e6 || got.RTT != 20*time.Millisecond {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := NewPlan(got); err != nil {
		t.Error(err)
	}
	if _, err := (Settings{Rate: "fast", Inputs: in, RTTGiven: true}).Parse(); err == nil || err.Error()[:7] != "--rate:" {
		t.Errorf("bad rate: %v", err)
	}
	in.TruncFactor = 0
	if _, err := (Settings{Rate: "10M", Inputs: in, RTTGiven: true}).Parse(); err == nil || err.Error() != "--trunc-factor: want 1 to 100, got 0" {
		t.Errorf("trunc 0: %v", err)
	}
}

// TestSettingsNeedRateAndRTT: --rate and --rtt have no defaults; the error
// names what the settings were for.
func TestSettingsNeedRateAndRTT(t *testing.T) {
	in := Inputs{Target: Target{RTT: 20 * time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: DefaultAlpha, Beta: DefaultBeta, TruncFactor: DefaultTruncFactor}
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{Inputs: in, RTTGiven: true}, "a run needs --rate and --rtt"},
		{Settings{Rate: "10M", Inputs: in}, "a run needs --rate and --rtt"},
		{Settings{Rate: "10M", Inputs: in, ForPlan: true}, "--plan needs --rate and --rtt"},
	} {
		if _, err := c.s.Plan(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.s, err, c.want)
		}
	}
	if p, err := (Settings{Rate: "10M", Inputs: in, RTTGiven: true}).Plan(); err != nil || p.RateBps != 10e6 {
		t.Errorf("plan %+v, %v", p, err)
	}
}
