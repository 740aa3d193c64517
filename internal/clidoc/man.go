package clidoc

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Man writes sonde(1) (docs/sonde.1, installed by make deb) in roff from
// the command tree, as Markdown writes docs/cli.md: every command with its
// usage, help and flags, and the exit codes.
func Man(w io.Writer, root *cobra.Command, exits []ExitCode) error {
	var b strings.Builder
	b.WriteString(`.\" Generated from the commands by go generate ./cmd/sonde; do not edit.` + "\n")
	b.WriteString(".TH SONDE 1 \"\" \"sonde\" \"User Commands\"\n")
	fmt.Fprintf(&b, ".SH NAME\nsonde \\- %s\n", roff(root.Short))
	b.WriteString(".SH SYNOPSIS\n.B sonde\n\\fICOMMAND\\fR [\\fIFLAGS\\fR] [\\fIARGS\\fR]\n")
	fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n%s\n.fi\n", roffText(root.Long))
	b.WriteString(".PP\nProgress, notes and errors go to standard error; an error is one line. " +
		"\\fB\\-\\-json\\fR, \\fB\\-\\-html\\fR and \\fB\\-\\-csv\\fR \\fIFILE\\fR write a result, \\fB\\-\\fR meaning standard output.\n")
	b.WriteString(".SH COMMANDS\n")
	manCommands(&b, root)
	b.WriteString(".SH \"EXIT STATUS\"\n")
	for _, e := range exits {
		fmt.Fprintf(&b, ".TP\n.B %d\n%s\n", e.Code, roff(e.Text))
	}
	b.WriteString(".SH FILES\n.TP\n.I /etc/sonde/monitor.json\nthe configuration of the sonde\\-monitor unit (sonde monitor run \\-\\-config)\n" +
		".TP\n.I /etc/default/sonde\nthe arguments of the sonde unit (sonde serve)\n" +
		".TP\n.I /var/lib/sonde\nthe state directory of both units (the monitor's store)\n")
	b.WriteString(".SH \"SEE ALSO\"\n" + `\fBirtt\fR(1), \fBiperf3\fR(1); /usr/share/doc/sonde/ (cli.md, monitor.md, fleet.md, store.md)` + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// manCommands writes cmd's subsection, then its subcommands' (the order
// and the commands left out are docCommands').
func manCommands(b *strings.Builder, cmd *cobra.Command) {
	if cmd.HasParent() {
		fmt.Fprintf(b, ".SS \"%s\"\n%s\n", roff(cmd.CommandPath()), roff(cmd.Short))
		fmt.Fprintf(b, ".PP\n.nf\n%s\n.fi\n", roffText(cmd.UseLine()))
		if cmd.Long != "" {
			fmt.Fprintf(b, ".PP\n.nf\n%s\n.fi\n", roffText(strings.TrimSpace(cmd.Long)))
		}
		manFlags(b, cmd.NonInheritedFlags())
	}
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		manCommands(b, c)
	}
}

func manFlags(b *strings.Builder, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" || f.Name == "help" {
			return
		}
		name, usage := pflag.UnquoteUsage(f)
		flag := `\fB\-\-` + roff(f.Name) + `\fR`
		if f.Shorthand != "" {
			flag = `\fB\-` + roff(f.Shorthand) + `\fR, ` + flag
		}
		if name != "" {
			flag += ` \fI` + roff(name) + `\fR`
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", flag, roffText(usage))
	})
}

// roff escapes text for one roff line: backslashes and hyphens (a
// hyphen-minus, as in flags, not a hyphen).
func roff(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`, "\n", " ").Replace(s)
}

// roffText escapes lines of text: each line as roff does, and a line
// that would start with a control character (. or ') made plain with \&.
func roffText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(l)
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		if strings.TrimSpace(l) == "" {
			l = ".sp"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}
