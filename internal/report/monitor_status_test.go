package report

import (
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/monitor"
	"github.com/sonde-project/sonde/internal/monitor/ship"
	"github.com/sonde-project/sonde/internal/store"
)

// TestMonitorStatusClock: `monitor status` prints the clock-step field of
// /status, and says so when there was no step.
func TestMonitorStatusClock(t *testing.T) {
	at := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	var b strings.Builder
	if err := WriteMonitorStatus(&b, &monitor.Status{Name: "m", Clock: monitor.ClockStatus{Steps: 2, LastStepS: -0.25, LastStepNs: at.UnixNano()}}); err != nil {
		t.Fatal(err)
	}
	if want := "clock: 2 wall-clock step(s) since the start, the last -0.250 s at 2026-11-26T07:00:00Z"; !strings.Contains(b.String(), want) {
		t.Errorf("status with steps:\n%s\nwant a line %q", b.String(), want)
	}
	b.Reset()
	_ = WriteMonitorStatus(&b, &monitor.Status{Name: "m"})
	if want := "clock: no wall-clock step since the start"; !strings.Contains(b.String(), want) {
		t.Errorf("status without steps:\n%s\nwant a line %q", b.String(), want)
	}
}

// TestMonitorStatusShip: `monitor status` shows the shipper's health, the
// rows pending and the lag, and the tables behind.
func TestMonitorStatusShip(t *testing.T) {
	var b strings.Builder
	_ = WriteMonitorStatus(&b, &monitor.Status{Name: "m", Ship: &ship.Status{Dest: "postgres://db/fleet", LastError: "store: refused: monitor \"m\" is revoked",
		Tables: []ship.TableStatus{{Table: store.TableRollups, PendingRows: 120, LagSeconds: 3600}, {Table: store.TableEvents}}}})
	out := b.String()
	for _, want := range []string{"ship to postgres://db/fleet: FAILING: store: refused", "120 rows pending, 1h0m0s behind", "    rollups  120  pending, 1h0m0s behind"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "events ") {
		t.Errorf("a table with nothing pending is listed:\n%s", out)
	}
}

// TestMonitorStatusStreams: the streams are one table, numbers
// right-aligned, "-" for a figure not known yet; a stream's problem and
// the events follow.
func TestMonitorStatusStreams(t *testing.T) {
	var b strings.Builder
	_ = WriteMonitorStatus(&b, &monitor.Status{Name: "m", Streams: []monitor.StreamStatus{
		{Name: "198.18.0.1:862/stamp", Sent: 1200, Lost: 3, LastRTTMs: 12.345, LossLastMinute: 0.0025},
		{Name: "b", Sent: 5, LastRTTMs: -1, LossLastMinute: -1, Problem: "its replies parse as no reflector's"}},
		LastEvents: []model.MonitorEvent{{Kind: model.EventOutage, StartNs: time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC).UnixNano(), Text: "outage"}}})
	want := `monitor m, up 0s
  STREAM                SENT  LOST  LATE  LAST RTT  LOSS (LAST MIN)
  198.18.0.1:862/stamp  1200     3     0  12.35 ms  0.25 %
  b                        5     0     0  -         -
  problem of b: its replies parse as no reflector's
  store : FAILING:  (backlog 0 rows, 0 dropped)
  clock: no wall-clock step since the start
  2026-11-26T07:00:00Z  outage  outage
`
	if b.String() != want {
		t.Errorf("status:\n%s\nwant:\n%s", b.String(), want)
	}
}
