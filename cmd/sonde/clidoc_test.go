package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md and docs/sonde.1 from the commands")

// TestCLIDoc: docs/cli.md is what the commands produce. After changing a
// flag or a help text, run `go generate ./cmd/sonde` (go test -update).
func TestCLIDoc(t *testing.T) {
	var buf bytes.Buffer
	if err := writeCLIDoc(&buf, newRootCmd()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "cli.md")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go generate ./cmd/sonde)", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Errorf("docs/cli.md differs from the commands' flags and help: run go generate ./cmd/sonde")
	}
}

// TestManPage: docs/sonde.1 is what the commands produce, and man reads it
// without a warning.
func TestManPage(t *testing.T) {
	var buf bytes.Buffer
	if err := writeManPage(&buf, newRootCmd()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "sonde.1")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go generate ./cmd/sonde)", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Errorf("docs/sonde.1 differs from the commands' flags and help: run go generate ./cmd/sonde")
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
