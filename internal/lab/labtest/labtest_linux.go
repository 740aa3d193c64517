//go:build linux

package labtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sonde-project/sonde/internal/lab"
)

// Lab is a running one-link lab owned by a test.
type Lab struct {
	*lab.Lab
	t          testing.TB
	down       bool
	captureDir string
	// TruthPath is the ground-truth file ("" without Options.Truth).
	TruthPath string
}

// Options configure OneLink.
type Options struct {
	// Name names the scenario and its link (for logs and namespaces).
	Name string
	// Both, Up and Down are the link's emulator settings (docs/emulator.md).
	Both, Up, Down string
	// Seed makes the link's random processes reproducible.
	Seed uint64
	// Truth records the per-packet ground truth.
	Truth bool
}

// OneLink starts a lab of one link between client and server. It fails the
// test if the lab does not come up; t.Cleanup takes it down.
func OneLink(t testing.TB, o Options) *Lab {
	t.Helper()
	dir := t.TempDir()
	l := &Lab{t: t, captureDir: filepath.Join(dir, "cap")}
	if err := os.Mkdir(l.captureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.Truth {
		l.TruthPath = filepath.Join(dir, "truth.gt")
	}
	prof, err := lab.Scenario{Name: o.Name, Links: []lab.ScenarioLink{{Name: "link1", Both: o.Both, Up: o.Up, Down: o.Down}}}.Parse()
	if err != nil {
		t.Fatal(err)
	}
	l.Lab, err = lab.UpProfile(context.Background(), prof, lab.Options{Seed: o.Seed, TruthPath: l.TruthPath, CaptureDir: l.captureDir, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Down)
	return l
}

// Down stops the lab, which flushes and closes its capture and truth
// files. It may be called more than once.
func (l *Lab) Down() {
	if l.down {
		return
	}
	l.down = true
	if err := l.Lab.Down(); err != nil {
		l.t.Errorf("lab down: %v", err)
	}
}

// Capture takes the lab down and returns its pcapng file (both ends of
// the link, as interfaces 0 and 1).
func (l *Lab) Capture() string {
	l.t.Helper()
	l.Down()
	matches, _ := filepath.Glob(filepath.Join(l.captureDir, "*.pcapng"))
	if len(matches) != 1 {
		l.t.Fatalf("lab captures: want 1 pcapng, have %v", matches)
	}
	return matches[0]
}
