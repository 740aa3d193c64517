package report

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sonde-project/sonde/internal/monitor"
)

// WriteMonitorStatus writes a running monitor's /status as `sonde monitor
// status` prints it: each stream's counts and last figures, the load
// state, the store's and the shipper's health, the clock's steps and the
// newest events.
func WriteMonitorStatus(w io.Writer, st *monitor.Status) error {
	ew := &errWriter{w: w}
	up := time.Duration(st.NowNs - st.StartedNs).Round(time.Second)
	fmt.Fprintf(ew, "monitor %s, up %v\n", st.Name, up)
	streams := table{indent: "  ", right: []bool{false, true, true, true}}
	streams.row("STREAM", "SENT", "LOST", "LATE", "LAST RTT", "LOSS (LAST MIN)")
	for _, s := range st.Streams {
		rtt, loss := "-", "-"
		if s.LastRTTMs >= 0 {
			rtt = fixed(s.LastRTTMs, 2) + " ms"
		}
		if s.LossLastMinute >= 0 {
			loss = fixed(100*s.LossLastMinute, 2) + " %"
		}
		streams.row(s.Name, num(s.Sent), num(s.Lost), num(s.Late), rtt, loss)
	}
	if len(st.Streams) > 0 {
		_ = streams.write(ew)
	}
	for _, s := range st.Streams {
		if s.Problem != "" {
			fmt.Fprintf(ew, "  problem of %s: %s\n", s.Name, s.Problem)
		}
	}
	if l := st.Load; l != nil {
		stale := ""
		if l.Stale {
			stale = ", stale driver"
		}
		fmt.Fprintf(ew, "  load on %s: %s (up %.0f / %.0f bit/s, down %.0f / %.0f bit/s; counters every %.0f ms%s)\n",
			l.Interface, l.State, l.UpRateBps, l.UpBps, l.DownRateBps, l.DownBps, l.ResolutionMs, stale)
	}
	health := "ok"
	if !st.Store.Healthy {
		health = "FAILING: " + st.Store.LastError
	}
	fmt.Fprintf(ew, "  store %s: %s (backlog %d rows, %d dropped)\n", st.Store.Location, health, st.Store.BacklogRows, st.Store.DroppedRows)
	if sh := st.Ship; sh != nil {
		health := "ok"
		if !sh.Healthy {
			health = "FAILING: " + sh.LastError
		}
		var lag float64
		var pending int64
		for _, t := range sh.Tables {
			lag, pending = max(lag, t.LagSeconds), pending+t.PendingRows
		}
		fmt.Fprintf(ew, "  ship to %s: %s (%d rows pending, %s behind", sh.Dest, health, pending, seconds(lag))
		if sh.UnshippedDeleted > 0 {
			fmt.Fprintf(ew, "; %d rows deleted unshipped", sh.UnshippedDeleted)
		}
		fmt.Fprintln(ew, ")")
		tables := table{indent: "    ", right: []bool{false, true}}
		for _, t := range sh.Tables {
			if t.PendingRows > 0 {
				tables.row(string(t.Table), strconv.FormatInt(t.PendingRows, 10), "pending, "+seconds(t.LagSeconds)+" behind")
			}
		}
		_ = tables.write(ew)
	}
	// A stepped wall clock shifts the timestamps of what was written around
	// it (docs/monitor.md); the daemon's schedule is monotonic and goes on.
	if c := st.Clock; c.Steps > 0 {
		fmt.Fprintf(ew, "  clock: %d wall-clock step(s) since the start, the last %+.3f s at %s\n",
			c.Steps, c.LastStepS, time.Unix(0, c.LastStepNs).UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintln(ew, "  clock: no wall-clock step since the start")
	}
	events := table{indent: "  "}
	for _, e := range st.LastEvents {
		events.row(time.Unix(0, e.StartNs).UTC().Format(time.RFC3339), string(e.Kind), e.Text)
	}
	_ = events.write(ew)
	return ew.err
}

// seconds is a span of seconds to the second, as Go prints a duration.
func seconds(s float64) string { return time.Duration(s * 1e9).Round(time.Second).String() }
