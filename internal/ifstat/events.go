package ifstat

import (
	"fmt"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/units"
)

// add queues an event for delivery once Observe drops its lock.
func (t *Tracker) add(ev model.MonitorEvent) {
	if t.nev < len(t.events) {
		t.events[t.nev] = ev
		t.nev++
	}
}

func (t *Tracker) event(nowNs int64, text string, flag string, detail map[string]float64) model.MonitorEvent {
	return model.MonitorEvent{
		Kind: model.EventCounters, StartNs: nowNs, EndNs: nowNs, Stream: -1,
		Text: text, Detail: detail, Flags: []string{flag},
	}
}

func (t *Tracker) name() string {
	if t.cfg.Name == "" {
		return "interface"
	}
	return t.cfg.Name
}

// noteChanges counts wraps, resets and jumps and queues their events: the
// first wrap only (a 32-bit counter at 1 Gbit/s wraps every 34 s), and at
// most one reset and one jump event per eventQuietNs, the ones in between
// counted in the next.
func (t *Tracker) noteChanges(nowNs int64, chRx, chTx change, oldRx, newRx, oldTx, newTx uint64) {
	has := func(c change) bool { return chRx == c || chTx == c }
	detail := func() map[string]float64 {
		return map[string]float64{
			"rx_before": float64(oldRx), "rx_after": float64(newRx),
			"tx_before": float64(oldTx), "tx_after": float64(newTx),
		}
	}
	if has(changeWrap) {
		if t.wraps == 0 {
			t.add(t.event(nowNs, fmt.Sprintf("%s: 32-bit byte counters wrapped; counted across the wrap", t.name()), "wrap", detail()))
		}
	}
	for _, c := range [2]change{chRx, chTx} {
		if c == changeWrap {
			t.wraps++
		}
	}
	if has(changeReset) {
		t.resets++
		if nowNs-t.lastResetEv >= eventQuietNs {
			d := detail()
			d["suppressed"] = float64(t.quietResets)
			t.add(t.event(nowNs, fmt.Sprintf("%s: byte counters reset (driver reload or interface re-created); bytes since the reset counted", t.name()), "reset", d))
			t.lastResetEv, t.quietResets = nowNs, 0
		} else {
			t.quietResets++
		}
	}
	if has(changeJump) {
		t.jumps++
		if nowNs-t.lastJumpEv >= eventQuietNs {
			d := detail()
			d["suppressed"] = float64(t.quietJumps)
			d["max_bps"] = t.cfg.MaxBps
			t.add(t.event(nowNs, fmt.Sprintf("%s: byte counters jumped faster than %s; the jump is not counted", t.name(), units.FormatRate(t.cfg.MaxBps)), "jump", d))
			t.lastJumpEv, t.quietJumps = nowNs, 0
		} else {
			t.quietJumps++
		}
	}
}

// noteResolution queues the event for a change of effective resolution.
func (t *Tracker) noteResolution(nowNs, oldRes int64) {
	res := time.Duration(t.stale.resNs)
	d := map[string]float64{"resolution_ms": float64(res) / 1e6, "previous_ms": float64(oldRes) / 1e6}
	if t.stale.resNs > t.intervalNs {
		t.add(t.event(nowNs, fmt.Sprintf("%s: the counters change only every %v (a driver or an agent that refreshes them that seldom); load states use a %v window",
			t.name(), res, time.Duration(t.windowNs())), "stale", d))
		return
	}
	t.add(t.event(nowNs, fmt.Sprintf("%s: counters change at every %v read again", t.name(), res), "fresh", d))
}
