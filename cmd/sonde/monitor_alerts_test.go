package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/alert"
)

func runAlertsReplay(args ...string) (string, string, int) {
	return runCmd(newMonitorAlertsReplayCmd(), args...)
}

// TestAlertsReplay: monitorStore's minute loses probes 50 and 51 of every
// 100 (one lost, one late): a stream outage rule of ≥ 150 ms fires and
// resolves six times; R(200 ms) = 88 % fires a reliability rule once.
func TestAlertsReplay(t *testing.T) {
	db := monitorStore(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "m.json")
	os.WriteFile(cfg, []byte(`{"targets": ["stamp://198.18.0.2"], "alerts": {"rules": [
		{"name": "gap", "kind": "outage", "scope": "stream", "for": "150ms"},
		{"name": "r200", "severity": "critical", "kind": "reliability", "latency": "200ms", "reliability": 0.95, "window": "1m", "min_probes": 300}]}}`), 0o644)
	text, stderr, code := runAlertsReplay("--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:10:00Z", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"monitor home, 2026-01-01T00:00:00Z to 2026-01-01T00:10:00Z: 600 probes, rules gap, r200\n",
		"alert gap [warning] FIRING at 2026-01-01T00:00:05Z: outage of stream 198.18.0.2:862/stamp: every probe lost for",
		"alert gap [warning] RESOLVED at 2026-01-01T00:00:05Z: outage of stream 198.18.0.2:862/stamp over after 200ms\n",
		"alert gap [warning] FIRING at 2026-01-01T00:00:55Z",
		"alert r200 [critical] FIRING at 2026-01-01T00:00:30Z: R(200ms) over 1m0s on stream 198.18.0.2:862/stamp is 88.00 % (264 of 300 probes)",
		"7 firings; still firing at the end: 1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	js := filepath.Join(dir, "a.json")
	if _, stderr, code := runAlertsReplay("--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:10:00Z", "--config", cfg, "--json", js); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res alert.ReplayResult
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &res); err != nil || len(res.Changes) != 13 || res.Probes != 600 || len(res.Firing) != 1 || res.Firing[0].Rule != "r200" {
		t.Fatalf("%v: %s", err, b)
	}
	// Without --config, the default rule: no outage of the link ≥ 10 s.
	text, _, code = runAlertsReplay("--store", db, "--from", "2026-01-01", "--to", "2026-01-01T00:10:00Z")
	if code != 0 || !strings.Contains(text, "rules link-outage\n0 firings; still firing at the end: 0\n") {
		t.Fatalf("exit %d:\n%s", code, text)
	}
}

func TestAlertsReplayErrors(t *testing.T) {
	db := monitorStore(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"alerts": {"rules": [{"name": "x", "kind": "reliability", "latency": "200ms", "reliability": 1.5}]}}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--store", db, "--config", bad}, `alerts: rule "x": reliability 1.5: want a fraction`, 2},
		{[]string{"--store", db, "--config", filepath.Join(dir, "none.json")}, "no such file", 2},
		{[]string{"--store", db, "--since", "400d"}, "at most 366 days", 2},
		{[]string{"--store", filepath.Join(dir, "none.db")}, "no such file", 1},
		{[]string{"--store", db, "--name", "office"}, `no monitor named "office"`, 1},
		{[]string{"--store", db, "--json", filepath.Join(dir, "no", "a.json")}, "--json", 2},
	} {
		out, stderr, code := runAlertsReplay(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want %d and %q", tc.args, code, stderr, out, tc.code, tc.want)
		}
	}
}
