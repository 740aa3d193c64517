package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

func TestLoadBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: no disk is used, and Load must refuse it before reading.
	if err := f.Truncate(MaxSavedBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "256 MiB") {
		t.Errorf("Load of a file over the limit: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Load of a directory: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
	good := filepath.Join(dir, "u.json")
	if err := os.WriteFile(good, encode(t, udpFixture(0)), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(good); err != nil || s.Schema() != model.UDPSchemaVersion || s.Name != good {
		t.Errorf("Load: %v, %+v", err, s)
	}
}
