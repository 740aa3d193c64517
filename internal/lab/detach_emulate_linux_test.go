package lab

import (
	"context"
	"io"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/emulator/forward"
)

// TestDetachChildEnds: a background process that ends before its lab is
// up is an error carrying its log, and the log does not stay behind.
func TestDetachChildEnds(t *testing.T) {
	dir := t.TempDir()
	_, _, err := Detach(dir, "/bin/sh", []string{"-c", "echo no lab here; exit 3"})
	if err == nil || !strings.Contains(err.Error(), "background process ended") || !strings.Contains(err.Error(), "no lab here") {
		t.Fatalf("%v; want the child's end and its log", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files left in the state directory", len(ents))
	}
}

// TestEmulateAddresses: addresses outside 198.18.0.0/15 are refused
// before anything is made.
func TestEmulateAddresses(t *testing.T) {
	e := Emulation{NSA: "a", NSB: "b", AddrA: netip.MustParsePrefix("192.0.2.1/24"), AddrB: netip.MustParsePrefix("198.18.1.2/24")}
	err := Emulate(context.Background(), io.Discard, e, func(up, down forward.Stats) {})
	if err == nil || !strings.Contains(err.Error(), "198.18.0.0/15") {
		t.Fatalf("%v; want the range refused", err)
	}
}
