package monitor

import (
	"github.com/sonde-project/sonde/internal/units"

	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/udptest/testreflector"
)

// TestDaemonShips: with --ship, the daemon's shipper sends the restart
// to the fleet store at once, and /status and /metrics show its lag.
// (internal/monitor/ship tests the shipping itself against PostgreSQL;
// the fleet store here is a SQLite file, which takes shipments alike.)
func TestDaemonShips(t *testing.T) {
	refl, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	defer refl.Close()
	dir := t.TempDir()
	fleetURL := filepath.Join(dir, "fleet.db")
	fleet, err := store.Open(context.Background(), fleetURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fleet.Close()
	token, err := fleet.AddMonitor(context.Background(), store.Identity{Name: "shipper"}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	d, _, stop := startDaemon(t, Config{Targets: []string{"stamp://" + refl.Addr()}, Rate: 10, Timeout: units.Duration(200 * time.Millisecond),
		Store: filepath.Join(dir, "m.db"), Listen: "127.0.0.1:0", Name: "shipper", Ship: fleetURL, ShipToken: token}, &logs)
	base := "http://" + d.Addr().String()
	var s Status
	for range 50 { // up to 5 s: the first pass runs at the start
		if err := json.Unmarshal([]byte(get(t, base+"/status")), &s); err != nil {
			t.Fatal(err)
		}
		if s.Ship != nil && s.Ship.Healthy {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s.Ship == nil || !s.Ship.Healthy || len(s.Ship.Tables) != 4 {
		t.Fatalf("status: ship %+v; log %s", s.Ship, logs.String())
	}
	metrics := get(t, base+"/metrics")
	for _, m := range []string{`sonde_monitor_ship_lag_seconds{table="rollups"}`, `sonde_monitor_ship_pending_rows{table="events"}`, "sonde_monitor_ship_healthy 1"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	stop()
	ms, err := fleet.ListMonitors(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rs, err := fleet.Restarts(context.Background(), ms["shipper"], 0, 1<<62)
	if err != nil || len(rs) != 1 || rs[0].Version != "test" {
		t.Errorf("fleet restarts: %+v, %v", rs, err)
	}
}
