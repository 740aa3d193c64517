//go:build !monitoronly

package main

import "testing"

// TestCLIDoc: docs/cli.md is what the commands produce. After changing a
// flag or a help text, run `go generate ./cmd/sonde` (go test -update).
func TestCLIDoc(t *testing.T) {
	checkGenerated(t, "cli.md", writeCLIDoc)
}

// TestManPage: docs/sonde.1 is what the commands produce, and man reads it
// without a warning.
func TestManPage(t *testing.T) {
	checkManPage(t, "sonde.1")
}
