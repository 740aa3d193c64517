package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestOutputsCheck: one output on stdout at most, --quiet only with a
// file output, an unwritable path refused, and nothing left behind.
func TestOutputsCheck(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		o    Outputs
		want string
	}{
		{Outputs{JSON: "-", HTML: "-"}, "only one output"},
		{Outputs{Quiet: true}, "--quiet without"},
		{Outputs{JSON: filepath.Join(dir, "no", "r.json")}, "--json: open "},
		{Outputs{HTML: dir}, "is a directory"},
		{Outputs{JSON: filepath.Join(dir, "r.json"), Quiet: true}, ""},
	} {
		err := c.o.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("Check left %d files", len(ents))
	}
}

// TestOutputsWrite: JSON to stdout takes the text's place; a failed
// output sends the text to stderr so that nothing is lost.
func TestOutputsWrite(t *testing.T) {
	f := Forms{JSON: map[string]int{"a": 1}, Text: func(w io.Writer) error { _, err := io.WriteString(w, "summary\n"); return err }}
	var stdout, stderr bytes.Buffer
	if err := (Outputs{JSON: "-"}).Write(&stdout, &stderr, f); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "{\n  \"a\": 1\n}\n" || stderr.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	stdout.Reset()
	bad := filepath.Join(t.TempDir(), "no", "r.html")
	f.HTML = func(w io.Writer) error { return nil }
	err := (Outputs{JSON: "-", HTML: bad, Quiet: true}).Write(&stdout, &stderr, f)
	if err == nil || !strings.HasPrefix(err.Error(), "--html: ") || stderr.String() != "summary\n" {
		t.Errorf("error %v, stderr %q; want the --html error and the summary on stderr", err, stderr.String())
	}
}

// TestFormsOf: a result of a kind sonde report reads gets that kind's text
// and HTML; another value its JSON only.
func TestFormsOf(t *testing.T) {
	res := &model.UDPResult{Schema: model.UDPSchemaVersion}
	f := FormsOf(res)
	if f.JSON != res || f.Text == nil || f.HTML == nil {
		t.Fatalf("FormsOf(*UDPResult): %+v", f)
	}
	var got, want bytes.Buffer
	if err := f.Text(&got); err != nil {
		t.Fatal(err)
	}
	if err := WriteUDPText(&want, res); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("FormsOf's text differs from WriteUDPText's:\n%s\n%s", got.String(), want.String())
	}
	if f := FormsOf(struct{}{}); f.Text != nil || f.HTML != nil || f.JSON == nil {
		t.Errorf("FormsOf(struct{}): %+v", f)
	}
}
