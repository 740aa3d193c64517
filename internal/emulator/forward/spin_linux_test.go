package forward

import (
	"testing"
	"time"
)

// TestSpinBudget drives the budget as the forwarding loop does and checks
// that a thread that always wants to spin gets SpinShare of its time (plus
// the burst), and that one spinning rarely is never refused.
func TestSpinBudget(t *testing.T) {
	for _, c := range []struct {
		name       string
		step       time.Duration // loop iteration
		wantEvery  int           // the thread wants to spin every n-th iteration
		maxShare   float64
		allAllowed bool
	}{
		{"always", 2 * time.Microsecond, 1, SpinShare, false},
		{"1 Gbit/s deadlines", 12 * time.Microsecond, 1, SpinShare, false},
		{"100 Mbit/s deadlines", 10 * time.Microsecond, 12, 1.0 / 12, true},
	} {
		var b spinBudget
		var now, spun time.Duration
		const total = time.Second
		refused := 0
		for i := 0; now < total; i++ {
			b.charge(now)
			if i%c.wantEvery == 0 {
				if b.left() {
					b.spend()
					spun += c.step
				} else {
					refused++
				}
			}
			now += c.step
		}
		share := float64(spun) / float64(total)
		if limit := c.maxShare + float64(spinBurst)/float64(total); share > limit+1e-9 {
			t.Errorf("%s: spun %.3f of the time, want at most %.3f", c.name, share, limit)
		}
		if c.allAllowed && refused > 1 {
			t.Errorf("%s: %d spins refused, want none after the first", c.name, refused)
		}
		if !c.allAllowed && share < SpinShare*0.9 {
			t.Errorf("%s: spun %.3f of the time, want about %.2f", c.name, share, SpinShare)
		}
		t.Logf("%s: spun %.3f of the time, %d refused", c.name, share, refused)
	}
}
