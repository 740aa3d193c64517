package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadSame: saved results of one kind load together and render as one
// result or a comparison; another kind among them is refused by name.
func TestLoadSame(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, v any) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, encode(t, v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b, u := write("a.json", fullResult()), write("b.json", fullResult()), write("u.json", udpFixture(1))
	if _, err := LoadSame([]string{a, u}); err == nil || !strings.HasPrefix(err.Error(), "cannot compare results of different kinds: "+a+" is sonde.result/v1, "+u+" is sonde.udp/v1") {
		t.Errorf("mixed kinds: %v", err)
	}
	if _, err := LoadSame([]string{a, filepath.Join(dir, "none.json")}); err == nil {
		t.Error("a missing file loaded")
	}
	for _, paths := range [][]string{{a}, {a, b}} {
		saved, err := LoadSame(paths)
		if err != nil {
			t.Fatal(err)
		}
		var text, csv bytes.Buffer
		f := RerenderForms(saved)
		if err := f.Text(&text); err != nil || f.CSV(&csv) != nil {
			t.Fatal(err)
		}
		if compared := strings.Contains(text.String(), "#2  "+b+":"); compared != (len(paths) == 2) {
			t.Errorf("%d files: comparison %v\n%s", len(paths), compared, text.String())
		}
	}
}
