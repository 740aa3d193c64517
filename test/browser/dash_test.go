package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/fleet"
	"github.com/sonde-project/sonde/internal/monitor"
	"github.com/sonde-project/sonde/internal/monitor/monitortest"
	"github.com/sonde-project/sonde/internal/store"
	"github.com/sonde-project/sonde/internal/udptest/testreflector"
	"github.com/sonde-project/sonde/internal/units"
	"github.com/sonde-project/sonde/web"
)

// TestDashboardFace loads the monitor's dashboard and the fleet view in
// headless Chromium (dash.mjs) at desktop and phone sizes, light and
// dark. The dashboard is a real daemon probing a STAMP reflector on
// loopback, over a store that monitortest filled through the store API
// with eight days of history (rollups, then two hours of raw probes,
// outages, loaded episodes, a gap and a restart); the fleet view reads a
// store of four such monitors in two ISPs. A figure reading "--", NaN or
// undefined fails it, as does an empty chart when the range holds data,
// no interval of 100 % loss drawn around the outage or no hatched gap,
// a chart the arrow keys cannot read, an event link that leads nowhere,
// a page wider than the screen, a fleet table that does not sort, and
// any serious or critical axe-core violation. Screenshots stay in
// $SONDE_ARTIFACTS/dash (else a temporary directory).
func TestDashboardFace(t *testing.T) {
	node, _ := prerequisites(t)
	if _, err := os.Stat(filepath.Join(repoRoot(t), "web", "node_modules", "axe-core", "axe.min.js")); err != nil {
		t.Skipf("axe-core not installed (cd web && npm ci): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	now := time.Now()
	day := 24 * time.Hour

	// The monitor: its history first, then the daemon on the same store.
	refl, err := testreflector.Start("127.0.0.1:0", testreflector.Config{Kind: testreflector.STAMP})
	if err != nil {
		t.Fatal(err)
	}
	defer refl.Close()
	cfg := monitor.Config{Targets: []string{"stamp://" + refl.Addr()}, Rate: 10, Timeout: units.Duration(time.Second),
		Store: filepath.Join(dir, "m.db"), Listen: "127.0.0.1:0", Name: "home"}
	cfg.Defaults()
	plan, err := cfg.Validate()
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, plan.Store, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := monitortest.Fill(ctx, st, monitortest.History{Name: "home", Streams: plan.Streams,
		FromNs: now.Add(-8 * day).UnixNano(), ToNs: now.UnixNano(), RawNs: int64(2 * time.Hour), Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	d, err := monitor.New(ctx, plan, monitor.Options{Store: st, Version: "dash-test"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopDaemon := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	defer func() { stopDaemon(); <-done }()

	// The fleet: four monitors in two ISPs, each with the same outage
	// (an upstream event).
	fst, err := store.Open(ctx, filepath.Join(dir, "fleet.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	for i, isp := range []string{"acme", "acme", "acme", "beta"} {
		_, err := monitortest.Fill(ctx, fst, monitortest.History{Name: fmt.Sprintf("home-%d", i+1), Labels: map[string]string{"isp": isp},
			Streams: plan.Streams, FromNs: now.Add(-8 * day).UnixNano(), ToNs: now.UnixNano(), RawNs: int64(time.Hour), Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	fsrv := httptest.NewServer(fleet.Handler(fst, web.Assets(), time.Now))
	defer fsrv.Close()

	out := t.TempDir()
	if a := os.Getenv("SONDE_ARTIFACTS"); a != "" {
		out = filepath.Join(a, "dash")
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	marks, _ := json.Marshal(map[string]int64{"outage_s": w.OutageNs / 1e9, "gap_from_s": w.GapFromNs / 1e9, "gap_to_s": w.GapToNs / 1e9})
	time.Sleep(3 * time.Second) // a few live probes
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "--experimental-websocket", "dash.mjs",
		"http://"+d.Addr().String()+"/", fsrv.URL+"/", out, string(marks))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dash.mjs: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "dash.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]struct {
		Axe      map[string]faceAudit `json:"axe"`
		Problems []string             `json:"problems"`
		Checked  int                  `json:"checked"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"dash", "fleet"} {
		for _, k := range []string{"desktop-light", "desktop-dark", "phone-light", "phone-dark"} {
			r, ok := rep[page+"-"+k]
			if !ok {
				t.Errorf("%s %s: not run", page, k)
				continue
			}
			if r.Checked < 5 {
				t.Errorf("%s %s: only %d figures checked", page, k, r.Checked)
			}
			for _, p := range r.Problems {
				t.Errorf("%s %s: %s", page, k, p)
			}
			for when, a := range r.Axe {
				if a.Passes < 10 {
					t.Errorf("%s %s: axe-core (%s) checked only %d rules", page, k, when, a.Passes)
				}
				for _, v := range a.Violations {
					t.Errorf("%s %s: axe-core (%s): %s", page, k, when, v)
				}
			}
		}
	}
	t.Logf("screenshots in %s", out)
}
