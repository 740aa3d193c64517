package reliability

import (
	"math"
	"testing"
)

// TestCapacitySpans: an episode takes the capacity of the span holding
// its start (60 s into the ADSL scenario), not the flat one nor a span
// that begins later; spans out of order or range are refused.
func TestCapacitySpans(t *testing.T) {
	cfg := Config{Loaded: LoadedConfig{UpBps: 5e6, Capacities: []CapacitySpan{
		{FromNs: t0, UpBps: 2e6},
		{FromNs: t0 + 30*sec, UpBps: 0.7e6, DownBps: 8e6},
		{FromNs: t0 + 61*sec, UpBps: 9e6},
	}}}
	ep := oneEpisode(t, analyse(t, cfg, streams("a/stamp"), loadedScenario(true, adslSawtooth)))
	if c := ep.Detail["capacity_bps"]; c != 0.7e6 {
		t.Fatalf("capacity %g bit/s, want the span at the episode's start, 0.7 Mbit/s", c)
	}
	if b := ep.Detail["buffer_bits"]; math.Abs(b-301e3)/301e3 > 0.10 {
		t.Errorf("inferred buffer %.0f bit, want 301 kbit ± 10 %%", b)
	}
	// Before the first span: the flat capacity.
	cfg.Loaded.Capacities = []CapacitySpan{{FromNs: t0 + 100*sec, UpBps: 1e6}}
	ep = oneEpisode(t, analyse(t, cfg, streams("a/stamp"), loadedScenario(true, adslSawtooth)))
	if c := ep.Detail["capacity_bps"]; c != 5e6 {
		t.Errorf("capacity %g bit/s before the first span, want the flat 5 Mbit/s", c)
	}
	for _, bad := range [][]CapacitySpan{
		{{FromNs: 2, UpBps: 1}, {FromNs: 1, UpBps: 1}},
		{{UpBps: -1}},
		{{DownBps: math.NaN()}},
		{{UpBps: 2e13}},
		make([]CapacitySpan, MaxCapacitySpans+1),
	} {
		if _, err := New(Config{Loaded: LoadedConfig{Capacities: bad}}, streams("a/stamp")); err == nil {
			t.Errorf("%d spans starting %+v: accepted", len(bad), bad[0])
		}
	}
}
