package main

import (
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/monitor"
	"github.com/sonde-project/sonde/internal/monitor/ship"
	"github.com/sonde-project/sonde/internal/store"
)

// TestPrintShipStatus: `monitor status` shows the shipper's health, the
// rows pending and the lag, and the tables behind.
func TestPrintShipStatus(t *testing.T) {
	var b strings.Builder
	printStatus(&b, &monitor.Status{Name: "m", Ship: &ship.Status{Dest: "postgres://db/fleet", LastError: "store: refused: monitor \"m\" is revoked",
		Tables: []ship.TableStatus{{Table: store.TableRollups, PendingRows: 120, LagSeconds: 3600}, {Table: store.TableEvents}}}})
	out := b.String()
	for _, want := range []string{"ship to postgres://db/fleet: FAILING: store: refused", "120 rows pending, 1h0m0s behind", "rollups    120 pending, 1h0m0s behind"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "events ") {
		t.Errorf("a table with nothing pending is listed:\n%s", out)
	}
}
