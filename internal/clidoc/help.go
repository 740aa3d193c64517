package clidoc

import (
	"fmt"
	"strings"
)

// ExitHelp lists the exit codes for a command's help text (the root's
// long help ends with it), as Markdown and Man list them for the pages.
func ExitHelp(exits []ExitCode) string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	for _, e := range exits {
		fmt.Fprintf(&b, "  %d  %s\n", e.Code, e.Text)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
