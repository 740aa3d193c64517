//go:build !monitoronly

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docExample is a command line of the documentation.
type docExample struct {
	where string   // file:line
	args  []string // after "sonde"
	block bool     // a line of a code block (a full example), not an inline synopsis
}

var inlineSonde = regexp.MustCompile("`(sonde [^`]+)`")

// docExamples extracts every command line starting with "sonde " from
// README.md and docs/*.md (but docs/cli.md, generated from the commands):
// the lines of code blocks, and inline code spans.
func docExamples(t *testing.T) []docExample {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	files = append(files, filepath.Join("..", "..", "README.md"))
	var out []docExample
	for _, path := range files {
		if filepath.Base(path) == "cli.md" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(path, filepath.Join("..", "..")+string(filepath.Separator))
		inBlock := false
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			where := name + ":" + strconv.Itoa(i+1)
			trim := strings.TrimSpace(line)
			if strings.HasPrefix(trim, "```") {
				inBlock = !inBlock
				continue
			}
			if inBlock {
				trim = strings.TrimPrefix(trim, "$ ")
				if strings.HasPrefix(trim, "sonde ") {
					out = append(out, docExample{where, shellWords(trim)[1:], true})
				}
				continue
			}
			// An inline span may go on over the next line.
			text := line
			if i+1 < len(lines) && strings.Count(line, "`")%2 == 1 {
				text += " " + lines[i+1]
			}
			for _, m := range inlineSonde.FindAllStringSubmatchIndex(text, -1) {
				if m[0] >= len(line) {
					continue // starts on the next line: found there
				}
				out = append(out, docExample{where, shellWords(text[m[2]:m[3]])[1:], false})
			}
		}
	}
	return out
}

// shellWords splits a command line as a shell would for these examples:
// quotes group words, an unquoted # starts a comment and an unquoted |
// ends the command (a pipe to another program).
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == '#' && !inWord, r == '|':
			return append(words, flush(&cur, inWord)...)
		case r == ' ' || r == '\t':
			words = append(words, flush(&cur, inWord)...)
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	return append(words, flush(&cur, inWord)...)
}

func flush(b *strings.Builder, inWord bool) []string {
	if !inWord {
		return nil
	}
	w := b.String()
	b.Reset()
	return []string{w}
}

// TestDocExamplesParse: every documented command line names a command
// that exists and flags it accepts, so a renamed flag fails here.
func TestDocExamplesParse(t *testing.T) {
	exs := docExamples(t)
	if len(exs) < 20 {
		t.Fatalf("found %d examples: the extraction is broken", len(exs))
	}
	for _, ex := range exs {
		root := newRootCmd()
		root.InitDefaultHelpCmd()
		cmd, rest, err := root.Find(ex.args)
		if err != nil {
			t.Errorf("%s: sonde %s: %v", ex.where, strings.Join(ex.args, " "), err)
			continue
		}
		err = cmd.ParseFlags(rest)
		if err != nil && !ex.block && strings.HasPrefix(err.Error(), "flag needs an argument") && len(rest) > 0 && strings.HasSuffix(err.Error(), rest[len(rest)-1]) {
			// A mention in the text ("sonde test --lab"), not an example.
			err = nil
		}
		if err != nil {
			t.Errorf("%s: sonde %s: %v", ex.where, strings.Join(ex.args, " "), err)
		}
	}
}

// TestDocExamplesRun runs the documented examples that can run on
// loopback in seconds: sonde test and sonde udp against a server this test
// starts (a SERVER argument is replaced with it), shortened to -t 1s, their
// output files in a temporary directory; and sonde lab profiles. The
// others (root, remote hosts, captures) are only parsed (above).
func TestDocExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs measurements")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, stop, err := startEmbedded(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	ran := 0
	for _, ex := range docExamples(t) {
		args, ok := runnable(ex, addr, dir)
		if !ok {
			continue
		}
		ran++
		t.Logf("%s: sonde %s", ex.where, strings.Join(args, " "))
		out, stderr, code := run(t, args...)
		if code != 0 {
			t.Errorf("%s: sonde %s: exit %d\n%s", ex.where, strings.Join(args, " "), code, stderr)
		} else if out == "" && !strings.Contains(strings.Join(args, " "), "-q") {
			t.Errorf("%s: sonde %s: no output", ex.where, strings.Join(args, " "))
		}
	}
	if ran < 3 {
		t.Errorf("ran %d examples: the selection is broken", ran)
	}
}

// runnable turns a documented example into one this test can run, or
// tells it cannot.
func runnable(ex docExample, server, dir string) ([]string, bool) {
	a := ex.args
	if !ex.block || len(a) == 0 {
		return nil, false
	}
	if len(a) >= 2 && a[0] == "lab" && a[1] == "profiles" {
		return a, true
	}
	if a[0] != "test" && a[0] != "udp" {
		return nil, false
	}
	out := []string{a[0]}
	hasServer := false
	for i := 1; i < len(a); i++ {
		switch w := a[i]; {
		case w == "--lab" || w == "--reflector" || strings.HasPrefix(w, "--lab=") || strings.HasPrefix(w, "--reflector="):
			return nil, false // root, or another reflector
		case w == "--classes" && i+1 < len(a) && strings.Contains(a[i+1], "@"):
			return nil, false // needs the server's further ports
		case w == "-t" || w == "--duration":
			i++ // replaced below
		case (w == "--json" || w == "--html" || w == "--raw") && i+1 < len(a):
			f := a[i+1]
			if f != "-" {
				f = filepath.Join(dir, filepath.Base(f))
			}
			out = append(out, w, f)
			i++
		case !strings.HasPrefix(w, "-") && !hasServer && (i == 1 || !strings.HasPrefix(a[i-1], "-") || isBoolFlag(a[i-1])):
			hasServer = true
			out = append(out, "http://"+server)
		default:
			out = append(out, w)
		}
	}
	if !hasServer {
		out = append(out, "http://"+server)
	}
	out = append(out, "-t", "1s")
	if a[0] == "test" {
		out = append(out, "--no-progress", "--baseline-samples", "20")
	}
	return out, true
}

func isBoolFlag(name string) bool {
	switch name {
	case "-k", "--insecure", "-q", "--quiet", "--no-progress", "--no-cos", "--no-foreign-probes", "--no-udp-probes":
		return true
	}
	return false
}
