package monitor

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// The detectors see the last recentSpan (15 min) of probes. An outage
// longer than that has, when it ends, its start cut at the window's
// start, and a cut event is skipped (an event is written once, when it
// was whole). So the core remembers an outage it saw open and whole, and
// when the same outage ends cut, writes it with the remembered start:
// one event of the right duration, however long the outage.

// outageKey identifies an outage across detector passes: its scope
// ("link", "target", "stream") and the stream that names it.
type outageKey struct {
	scope  string
	stream int32
}

type longOutage struct {
	start int64 // the outage's start when it was seen whole
	seen  int64 // the last pass that saw it open
}

// longForget is how long an outage not seen open is remembered: a few
// detector passes, so one that vanished (its scope changed, the daemon's
// window moved past it) is forgotten.
const longForget = int64(2 * time.Minute)

// trackOutage remembers open outages and restores the start of one that
// ends cut by the window, once it has settled. It returns the event to
// consider and false to skip it (cut and not remembered: written when it
// was whole, or never seen whole; or not settled yet).
func (c *core) trackOutage(e model.MonitorEvent, cut, settled bool, now int64) (model.MonitorEvent, bool) {
	if len(e.Flags) == 0 {
		return e, !cut
	}
	k := outageKey{e.Flags[0], e.Stream}
	open := false
	for _, f := range e.Flags {
		open = open || f == "open"
	}
	l, known := c.long[k]
	if open {
		if !cut && (!known || e.StartNs < l.start || now-l.seen > longForget) {
			l.start = e.StartNs
		}
		if !cut || known {
			l.seen = now
			c.long[k] = l
		}
		return e, !cut
	}
	if !cut {
		return e, true
	}
	if !known || l.start >= e.StartNs {
		return e, false
	}
	if !settled {
		l.seen = now
		c.long[k] = l
		return e, false
	}
	delete(c.long, k)
	return c.wholeOutage(e, l.start), true
}

// wholeOutage rewrites an outage event cut by the window with its real
// start. Every probe of an outage is lost (it is a run of failed probes),
// and probes are isochronous, so the probes lost are the duration times
// the rate per stream.
func (c *core) wholeOutage(e model.MonitorEvent, start int64) model.MonitorEvent {
	d := time.Duration(e.EndNs - start)
	streams := 1.0
	if n, ok := e.Detail["streams"]; ok && n >= 1 {
		streams = n
	}
	lost := streams * math.Round(d.Seconds()*c.plan.Rate)
	detail := make(map[string]float64, len(e.Detail))
	for k, v := range e.Detail {
		detail[k] = v
	}
	detail["duration_s"], detail["probes_lost"] = d.Seconds(), lost
	e.Detail, e.StartNs = detail, start
	what := strings.TrimPrefix(e.Text, "outage of ")
	if i := strings.LastIndex(what, ": "); i >= 0 {
		what = what[:i]
	}
	e.Text = fmt.Sprintf("outage of %s: %v, %.0f probes lost", what, d.Round(time.Millisecond), lost)
	e.Flags = append(append([]string(nil), e.Flags...), "longer-than-window")
	return e
}

// pruneLong forgets outages not seen open for longForget.
func (c *core) pruneLong(now int64) {
	for k, l := range c.long {
		if now-l.seen > longForget {
			delete(c.long, k)
		}
	}
}
