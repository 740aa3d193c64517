package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/monitor"
)

// TestPrintStatusClock: `monitor status` prints the clock-step field of
// /status, and says so when there was no step.
func TestPrintStatusClock(t *testing.T) {
	at := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	printStatus(&b, &monitor.Status{Name: "m", Clock: monitor.ClockStatus{Steps: 2, LastStepS: -0.25, LastStepNs: at.UnixNano()}})
	if want := "clock: 2 wall-clock step(s) since the start, the last -0.250 s at 2026-11-26T07:00:00Z"; !strings.Contains(b.String(), want) {
		t.Errorf("status with steps:\n%s\nwant a line %q", b.String(), want)
	}
	b.Reset()
	printStatus(&b, &monitor.Status{Name: "m"})
	if want := "clock: no wall-clock step since the start"; !strings.Contains(b.String(), want) {
		t.Errorf("status without steps:\n%s\nwant a line %q", b.String(), want)
	}
}
