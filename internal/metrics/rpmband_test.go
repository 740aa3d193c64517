package metrics

import (
	"math"
	"testing"
)

func TestRPMBands(t *testing.T) {
	for _, tc := range []struct {
		rpm         float64
		draft, appl string
	}{
		{0, "", ""}, {math.NaN(), "", ""}, {math.Inf(1), "", ""},
		{199, "Poor", "Low"}, {200, "Poor", "Medium"}, {299.9, "Poor", "Medium"},
		{300, "Fair", "Medium"}, {999, "Fair", "Medium"}, {1000, "Good", "High"},
		{5999, "Good", "High"}, {6000, "Excellent", "High"},
	} {
		if d, a := RPMBand(tc.rpm), RPMAppleBand(tc.rpm); d != tc.draft || a != tc.appl {
			t.Errorf("%v: %q %q, want %q %q", tc.rpm, d, a, tc.draft, tc.appl)
		}
	}
}
