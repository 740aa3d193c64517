package clidoc

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "a tool", Long: "Tool does things.\n.dot line"}
	sub := &cobra.Command{Use: "run [ARG]", Short: "run it", Long: "Run it -- now.", RunE: func(*cobra.Command, []string) error { return nil }}
	sub.Flags().StringP("out", "o", "x", "write to `FILE` | here")
	sub.Flags().String("old", "", "")
	_ = sub.Flags().MarkDeprecated("old", "use --out")
	sub.Flags().String("secret", "", "internal")
	_ = sub.Flags().MarkHidden("secret")
	root.AddCommand(sub)
	return root
}

// TestMarkdown: every command's section with its flags (hidden and
// deprecated ones left out, | escaped in a table), and the exit codes.
func TestMarkdown(t *testing.T) {
	var b strings.Builder
	if err := Markdown(&b, tree(), []ExitCode{{0, "success"}, {2, "usage"}}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"## tool run\n\nrun it", "| `-o`, `--out FILE` | `x` | write to FILE \\| here |", "| 2 | usage |"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "--old") || strings.Contains(s, "--secret") {
		t.Errorf("a deprecated or hidden flag is documented:\n%s", s)
	}
}

// TestMan: roff escapes hyphens and a line starting with a control
// character, and lists the exit codes.
func TestMan(t *testing.T) {
	var b strings.Builder
	if err := Man(&b, tree(), []ExitCode{{5, "a verdict FAIL"}}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{`.SS "tool run"`, `\fB\-o\fR, \fB\-\-out\fR \fIFILE\fR`, `Run it \-\- now.`, "\\&.dot line", ".B 5\na verdict FAIL"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "secret") {
		t.Errorf("a hidden flag is documented:\n%s", s)
	}
}
