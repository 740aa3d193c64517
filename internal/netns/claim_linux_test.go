package netns

import (
	"errors"
	"os"
	"os/exec"
	"testing"
)

func TestClaim(t *testing.T) {
	needRoot(t)
	owned, err := Add(UniqueName("cl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owned.Delete() })
	if links, err := owned.Links(); err != nil || len(links) != 1 || links[0] != "lo" {
		t.Fatalf("Links of a new namespace = %v, %v; want [lo]", links, err)
	}
	// A lock on a second open file conflicts even within one process.
	if _, err := Claim(owned.Name()); !errors.Is(err, ErrClaimed) {
		t.Fatalf("Claim of an owned namespace: %v, want ErrClaimed", err)
	}
	// A namespace nobody claims, as a crashed owner leaves it.
	orphan := UniqueName("cl")
	if out, err := exec.Command("ip", "netns", "add", orphan).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", orphan).Run() })
	got, err := ClaimOrphans(Prefix + "cl")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, n := range got {
		if n.Name() == owned.Name() {
			t.Errorf("ClaimOrphans took the owned namespace %s", owned.Name())
		}
		if n.Name() == orphan {
			found = true
			if err := n.Delete(); err != nil {
				t.Fatal(err)
			}
		}
		// Others may be orphans of other tests' crashed runs, or a
		// parallel test's: leave them.
		if n.Name() != orphan && n.claim != nil {
			n.claim.Close()
		}
	}
	if !found {
		t.Fatalf("ClaimOrphans missed the orphan %s (got %d)", orphan, len(got))
	}
	if _, err := Claim(owned.Name()); !errors.Is(err, ErrClaimed) {
		t.Fatalf("owned namespace lost its claim: %v", err)
	}
	if _, err := ClaimOrphans("other"); err == nil {
		t.Fatal("ClaimOrphans accepted a prefix without the sonde prefix")
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
}
