package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMBMFiles: directories give their *.json files in name order, an
// empty one is refused, and too many files are refused before any is read.
func TestMBMFiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.json", "a.json", "c.txt"} {
		os.WriteFile(filepath.Join(dir, n), []byte("{}"), 0o644)
	}
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	got, err := MBMFiles([]string{dir, "x.json"})
	if err == nil || !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
	got, err = MBMFiles([]string{dir})
	if err != nil || strings.Join(got, " ") != filepath.Join(dir, "a.json")+" "+filepath.Join(dir, "b.json") {
		t.Errorf("%q, %v", got, err)
	}
	if _, err := MBMFiles([]string{filepath.Join(dir, "empty")}); err == nil || !strings.Contains(err.Error(), "no .json files") {
		t.Errorf("empty directory: %v", err)
	}
	many := make([]string, MaxMBMFiles+1)
	for i := range many {
		many[i] = filepath.Join(dir, "a.json")
	}
	if _, err := MBMFiles(many); err == nil || !strings.Contains(err.Error(), "more than 10000 files") {
		t.Errorf("too many: %v", err)
	}
}

// TestComposeMBMFilesRefuses: a file that is not a saved MBM result is
// refused naming it.
func TestComposeMBMFilesRefuses(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(p, []byte(`{"schema":"sonde.result/v1"}`), 0o644)
	if _, err := ComposeMBMFiles([]string{p}, ""); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("%v", err)
	}
}
