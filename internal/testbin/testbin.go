// Package testbin gives end-to-end tests the sonde binary they run: the
// one SONDE_BIN names (a release build, or a run without a Go toolchain),
// or one built from this module into a directory the test owns. It is the
// one place tests build the binary, so every suite builds it the same way.
package testbin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildTimeout bounds `go build` on a cold cache on a slow machine.
const buildTimeout = 3 * time.Minute

// Sonde returns the path of the sonde binary to test: SONDE_BIN made
// absolute, or ./cmd/sonde built into dir.
func Sonde(dir string) (string, error) {
	if bin := os.Getenv("SONDE_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("SONDE_BIN: %w", err)
		}
		return abs, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	bin := filepath.Join(dir, "sonde")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sonde")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sonde: %w\n%s", err, out)
	}
	return bin, nil
}

// ModuleRoot is the directory of the go.mod the running test belongs to.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside a Go module")
	}
	return filepath.Dir(mod), nil
}

// Main is a suite's TestMain body: it sets *bin to the binary (SONDE_BIN,
// or one built into a temporary directory removed afterwards), runs m and
// returns its exit code. With rootOnly, a run as another user builds
// nothing: the suite's tests skip without root.
func Main(m *testing.M, bin *string, rootOnly bool) int {
	if rootOnly && os.Getenv("SONDE_BIN") == "" && os.Geteuid() != 0 {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "sonde-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = Sonde(dir); err != nil {
		fmt.Fprintln(os.Stderr, "testbin:", err)
		return 1
	}
	return m.Run()
}
