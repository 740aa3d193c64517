package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden's renderings from the current renderers (only for a change meant to show)")

// TestGoldenSaved: saved results of each kind (testdata/golden/*.json,
// written by sonde c33b3ed, the last release's code) render the same text
// and HTML as that release rendered them (the .txt and .html beside
// them). A change of a renderer that changes what a saved file shows
// fails here; regenerate the goldens (go test -update-golden) only for a
// change meant to show, and say so in its commit.
func TestGoldenSaved(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil || len(files) < 7 {
		t.Fatalf("golden files: %v, %d", err, len(files))
	}
	for _, f := range files {
		base := strings.TrimSuffix(f, ".json")
		s, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			ext   string
			write func(*bytes.Buffer) error
		}{
			{".txt", func(b *bytes.Buffer) error { return s.WriteText(b) }},
			{".html", func(b *bytes.Buffer) error { return s.WriteHTML(b) }},
		} {
			var got bytes.Buffer
			if err := c.write(&got); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if *updateGolden {
				if err := os.WriteFile(base+c.ext, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(base + c.ext)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("%s: the %s rendering differs from the release's (%d bytes, want %d)", f, c.ext, got.Len(), len(want))
			}
		}
	}
}
