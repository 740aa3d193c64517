package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the commands")

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
