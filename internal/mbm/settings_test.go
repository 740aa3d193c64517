package mbm

import (
	"testing"
	"time"
)

func TestSettingsParse(t *testing.T) {
	in := Inputs{Target: Target{RTT: 20 * time.Millisecond, MTU: 1500, HeaderOverhead: DefaultHeaderOverhead}, Alpha: DefaultAlpha, Beta: DefaultBeta, TruncFactor: DefaultTruncFactor}
	got, err := Settings{Rate: "10M", Inputs: in}.Parse()
	if err != nil || got.RateBps != 10e6 || got.RTT != 20*time.Millisecond {
		t.Fatalf("%+v, %v", got, err)
	}
	if _, err := NewPlan(got); err != nil {
		t.Error(err)
	}
	if _, err := (Settings{Rate: "fast", Inputs: in}).Parse(); err == nil || err.Error()[:7] != "--rate:" {
		t.Errorf("bad rate: %v", err)
	}
	in.TruncFactor = 0
	if _, err := (Settings{Rate: "10M", Inputs: in}).Parse(); err == nil || err.Error() != "--trunc-factor: want 1 to 100, got 0" {
		t.Errorf("trunc 0: %v", err)
	}
}
