package browser

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/server/servertest"
)

// faceAudit is one axe-core run: rules passed and serious or critical
// violations.
type faceAudit struct {
	Passes     int      `json:"passes"`
	Violations []string `json:"violations"`
}

// TestPageFace runs the page at desktop and phone sizes, light and dark
// (face.mjs), in Chromium: every figure the result holds is on the first
// screen and none reads "--" or NaN, the live view shows figures mid-run,
// the page is no wider than a phone, /r/ID renders the result without a
// run, and axe-core finds no serious or critical violation before, during
// or after the run. The screenshots stay in $SONDE_ARTIFACTS/face (else a
// temporary directory) for a person to look at.
func TestPageFace(t *testing.T) {
	node, _ := prerequisites(t)
	base := "http://" + servertest.Start(t, server.Config{Software: "sonde/face-test", PerIPPerMinute: -1})
	checkFace(t, node, base, "face", nil)
}

// TestPageFaceFirefox is TestPageFace in Firefox (Debian's firefox-esr over
// WebDriver BiDi), against a server that paces its connections as
// TestPageFirefox's does (firefoxPaceBps); screenshots in
// $SONDE_ARTIFACTS/face-firefox.
func TestPageFaceFirefox(t *testing.T) {
	node, _ := prerequisites(t)
	if _, err := os.Stat(firefox); err != nil {
		t.Skipf("no %s (make apt-deps installs firefox-esr): %v", firefox, err)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the paced server needs Linux (SO_MAX_PACING_RATE)")
	}
	base := "http://" + servertest.Serve(t, server.Config{Software: "sonde/face-test", PerIPPerMinute: -1},
		servertest.Options{PaceBps: firefoxPaceBps})
	checkFace(t, node, base, "face-firefox", []string{"SONDE_BROWSER=firefox"})
}

// checkFace runs face.mjs against base with env and fails the test on
// what it found; artefacts go to $SONDE_ARTIFACTS/dir.
func checkFace(t *testing.T, node, base, dir string, env []string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repoRoot(t), "web", "node_modules", "axe-core", "axe.min.js")); err != nil {
		t.Skipf("axe-core not installed (cd web && npm ci): %v", err)
	}
	out := t.TempDir()
	if a := os.Getenv("SONDE_ARTIFACTS"); a != "" {
		out = filepath.Join(a, dir)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--no-warnings", "--experimental-websocket", "face.mjs", base+"/?duration=3&rtc_duration=1", out)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("face.mjs: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "face.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]struct {
		Axe      map[string]faceAudit `json:"axe"`
		Problems []string             `json:"problems"`
		Figures  []string             `json:"figures"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"desktop-light", "desktop-dark", "phone-light", "phone-dark"} {
		r, ok := rep[k]
		if !ok {
			t.Errorf("%s: not run", k)
			continue
		}
		if len(r.Figures) < 5 {
			t.Errorf("%s: only %v on the first screen", k, r.Figures)
		}
		for _, p := range r.Problems {
			t.Errorf("%s: %s", k, p)
		}
		for _, when := range []string{"before", "during", "after"} {
			a := r.Axe[when]
			if a.Passes < 10 {
				t.Errorf("%s: axe-core %s the run checked only %d rules", k, when, a.Passes)
			}
			for _, v := range a.Violations {
				t.Errorf("%s: axe-core %s the run: %s", k, when, v)
			}
		}
	}
	for _, p := range rep["shared"].Problems {
		t.Errorf("/r/ID: %s", p)
	}
	for _, v := range rep["shared"].Axe["after"].Violations {
		t.Errorf("/r/ID: axe-core: %s", v)
	}
	t.Logf("screenshots in %s", out)
}
