package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md and docs/sonde.1 (with -tags monitoronly: docs/sonde-monitor.1) from the commands")

// checkGenerated compares docs/NAME with what write makes of the command
// tree (or rewrites it with -update). It reports whether the test goes on.
func checkGenerated(t *testing.T, name string, write func(io.Writer, *cobra.Command) error) (path string, goOn bool) {
	t.Helper()
	var buf bytes.Buffer
	if err := write(&buf, newRootCmd()); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join("..", "..", "docs", name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path, false
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go generate ./cmd/sonde)", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Errorf("docs/%s differs from the commands' flags and help: run go generate ./cmd/sonde", name)
	}
	return path, true
}

// checkManPage: docs/NAME is the man page this build's commands produce,
// and man reads it without a warning.
func checkManPage(t *testing.T, name string) {
	t.Helper()
	path, goOn := checkGenerated(t, name, writeManPage)
	if !goOn {
		return
	}
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man not installed")
	}
	cmd := exec.Command("man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", path)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("man --warnings: %v\n%s", err, stderr.String())
	}
}
