package pace_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/pace"
	"github.com/sonde-project/sonde/internal/stamp"
)

func TestWaitUntilNotEarly(t *testing.T) {
	unpin := pace.PinThread()
	defer unpin()
	clk := stamp.NewClock()
	for _, d := range []time.Duration{0, 50 * time.Microsecond, 2 * time.Millisecond, 30 * time.Millisecond} {
		deadline := time.Now().Add(d)
		if err := pace.WaitUntil(context.Background(), clk, deadline, 100*time.Microsecond); err != nil {
			t.Fatalf("wait %v: %v", d, err)
		}
		if now := time.Now(); now.Before(deadline) {
			t.Fatalf("wait %v returned %v early", d, deadline.Sub(now))
		}
	}
}

func TestWaitUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	err := pace.WaitUntil(ctx, stamp.NewClock(), start.Add(time.Hour), 100*time.Microsecond)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// Waits are cut into 20 ms pieces; a minute is a bound no loaded
	// machine reaches, an hour is the deadline the wait ignored.
	if el := time.Since(start); el > time.Minute {
		t.Fatalf("cancel noticed after %v", el)
	}
}
