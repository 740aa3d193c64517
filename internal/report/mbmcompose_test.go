package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestComposeSaved: sonde report reads a saved composition
// (sonde.mbm-compose/v1) and renders its text and HTML; LoadMBM reads it
// as a composition and refuses a plan as a result.
func TestComposeSaved(t *testing.T) {
	c := composeFixture()[0]
	b, _ := json.Marshal(c)
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var txt, html strings.Builder
	if err := s.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "MBM composition:") || !strings.Contains(txt.String(), c.Tests[0].ID) {
		t.Errorf("text:\n%s", txt.String())
	}
	if !strings.Contains(html.String(), "sonde mbm compose") || !strings.Contains(html.String(), string(c.Tests[0].Verdict)) {
		t.Errorf("html lacks the composition")
	}
	if r, got, err := LoadMBM(path); err != nil || r != nil || got == nil {
		t.Fatalf("LoadMBM: %v %v %v", r, got, err)
	}
	plan := model.MBMResult{Schema: model.MBMSchemaVersion, Plan: true}
	b, _ = json.Marshal(plan)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadMBM(path); err == nil || !strings.Contains(err.Error(), "a plan") {
		t.Errorf("a plan read as a result: %v", err)
	}
}
