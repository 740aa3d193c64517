// Package clidoc writes the reference pages of a cobra command tree: the
// Markdown reference (docs/cli.md) and the man page (docs/sonde.1), each
// command with its usage, help and flags, and the exit codes. Both are
// generated from the commands, so neither drifts from the flags (cmd/sonde's
// TestCLIDoc and TestManPage compare them; `go generate ./cmd/sonde`
// rewrites them). Written by hand rather than by cobra/doc, which needs
// go-md2man, another module, for its man pages.
package clidoc

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ExitCode is one exit status and its meaning.
type ExitCode struct {
	Code int
	Text string
}

// Markdown writes the CLI reference (sonde's docs/cli.md) from the
// command tree itself, so that it cannot drift from the flags, with the
// exit codes.
func Markdown(w io.Writer, root *cobra.Command, exits []ExitCode) error {
	var b strings.Builder
	b.WriteString("# sonde command line reference\n\n")
	b.WriteString("<!-- Generated from the commands by `go generate ./cmd/sonde`; do not edit. -->\n\n")
	b.WriteString("Conventions shared by every command:\n\n")
	b.WriteString("- `--json FILE`, `--html FILE`, `--csv FILE` (and `sonde udp --raw FILE`) write a result; `-` is stdout. " +
		"At most one of them may be `-`; the text summary then is not written (it would mix with the document), " +
		"except when an output fails, when it goes to stderr so that nothing measured is lost. `-q` drops the summary.\n")
	b.WriteString("- Rates are bit/s: `100M`, `100Mbit`, `100mbit/s`, `100Mbps`, `1.5Gbit/s`, `544k` (prefixes k M G T are powers of 1000; a `B` is refused). " +
		"Sizes are bytes: `500M`, `10GB`, `64KiB`. A limit is switched off with `off` or `0`; a negative limit is an error.\n")
	b.WriteString("- One flag name has one meaning and one type in every command: `--rate` is a bit rate (`mbm`); link capacities in bit/s are " +
		"`--link-rate` (`test`), `--up-link-rate` (`test`, `monitor run`, `monitor report`) and `--down-link-rate` (`monitor run`, " +
		"`monitor report`); how often probes go is " +
		"`--probe-interval`, a duration (`test`, `udp`, `rpm`, `monitor run`); `--timeout` is a probe's loss time and `--deadline` a " +
		"command's; `--up` and `--down` are link specifications (`emulate`). A renamed flag's old spelling (`monitor run --rate`, `--up`, " +
		"`--down`, `udp --interval`, …) works for one release, hidden from this page, and prints its replacement; so do the monitor's " +
		"old config keys (`rate`, `up`, `down`).\n")
	b.WriteString("- Progress, notes and errors go to stderr; an error is one line.\n\n")
	b.WriteString("## Exit status\n\n| code | meaning |\n|---|---|\n")
	for _, e := range exits {
		fmt.Fprintf(&b, "| %d | %s |\n", e.Code, e.Text)
	}
	b.WriteString("\n")
	docCommands(&b, root)
	_, err := io.WriteString(w, b.String())
	return err
}

// docCommands writes cmd's section, then its subcommands' (cobra's own
// help and completion commands left out).
func docCommands(b *strings.Builder, cmd *cobra.Command) {
	if cmd.HasParent() {
		fmt.Fprintf(b, "## %s\n\n%s\n\n", cmd.CommandPath(), cmd.Short)
		fmt.Fprintf(b, "```\n%s\n```\n\n", cmd.UseLine())
		if cmd.Long != "" {
			fmt.Fprintf(b, "```\n%s\n```\n\n", strings.TrimSpace(cmd.Long))
		}
		docFlags(b, cmd.NonInheritedFlags(), "Flags")
		docFlags(b, cmd.InheritedFlags(), "Inherited flags")
	}
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		docCommands(b, c)
	}
}

func docFlags(b *strings.Builder, fs *pflag.FlagSet, title string) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		name, usage := pflag.UnquoteUsage(f)
		flag := "`--" + f.Name
		if name != "" {
			flag += " " + name
		}
		flag += "`"
		if f.Shorthand != "" {
			flag = "`-" + f.Shorthand + "`, " + flag
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			def = "`" + f.DefValue + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", flag, def, strings.ReplaceAll(usage, "|", `\|`)))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n\n| flag | default | meaning |\n|---|---|---|\n%s\n\n", title, strings.Join(rows, "\n"))
}
