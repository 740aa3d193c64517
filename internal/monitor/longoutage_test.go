package monitor

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// TestLongOutageOneEvent: an outage longer than the detectors' 15-minute
// window is written once, when it ends, with its real start, duration and
// probes lost (it used to be skipped: its start was cut by the window).
// Shorter ones are written as before.
func TestLongOutageOneEvent(t *testing.T) {
	for _, mins := range []int64{5, 13, 20, 45} {
		c, fs := testCore(t, time.Second)
		ctx := context.Background()
		if err := c.restart(ctx, t0); err != nil {
			t.Fatal(err)
		}
		downFrom, downTo := uint32(5*600), uint32((5+mins)*600) // probes at 10/s
		seq := uint32(0)
		end := (10 + mins) * 60
		for sec := int64(1); sec <= end; sec++ {
			for ; int64(seq) < sec*10-20; seq++ {
				rtt := int64(20e6)
				if seq >= downFrom && seq < downTo {
					rtt = -1
				}
				c.ring.Push(sample(seq, rtt))
			}
			c.step(ctx, t0+sec*1e9, false)
		}
		evs, err := fs.Events(ctx, c.mid, t0, t0+1e13, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var outs []model.MonitorEvent
		for _, e := range evs {
			if e.Kind == model.EventOutage {
				outs = append(outs, e)
			}
		}
		if len(outs) != 1 {
			t.Fatalf("%d min: %d outage events: %+v", mins, len(outs), outs)
		}
		e := outs[0]
		wantStart := t0 + int64(downFrom)*100e6
		wantD := float64(mins * 60)
		if e.StartNs != wantStart || math.Abs(float64(e.EndNs-e.StartNs)/1e9-wantD) > 0.1 {
			t.Errorf("%d min: outage %v from +%v; want %v from +%v", mins, time.Duration(e.EndNs-e.StartNs),
				time.Duration(e.StartNs-t0), time.Duration(wantD*1e9), time.Duration(wantStart-t0))
		}
		if lost := e.Detail["probes_lost"]; math.Abs(lost-wantD*10) > 1 {
			t.Errorf("%d min: %v probes lost, want %v", mins, lost, wantD*10)
		}
		if len(c.long) != 0 {
			t.Errorf("%d min: %d outages still remembered after the end", mins, len(c.long))
		}
	}
}
