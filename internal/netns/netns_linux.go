//go:build linux

package netns

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Prefix starts every namespace and link name this package creates.
const Prefix = "sonde"

// ErrNotRoot is returned when the caller lacks the privileges to manage
// namespaces.
var ErrNotRoot = errors.New("network namespaces need root (CAP_NET_ADMIN and CAP_SYS_ADMIN)")

// NS is a named network namespace.
type NS struct {
	name string
	// claim, when set, is the namespace file opened and locked by this
	// process: the kernel drops the lock when the process dies.
	claim *os.File
}

// UniqueName returns Prefix + tag + a random suffix, short enough for an
// interface name (15 bytes) when tag is at most 4 bytes.
func UniqueName(tag string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return Prefix + tag + hex.EncodeToString(b[:])
}

// Add creates a namespace with the given name, claims it for this process
// (until Delete or exit) and brings its loopback up.
func Add(name string) (*NS, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if !strings.HasPrefix(name, Prefix) {
		return nil, fmt.Errorf("netns: name %q must start with %q", name, Prefix)
	}
	n, err := addClaimed(name)
	if err != nil {
		return nil, err
	}
	if err := n.IP("link", "set", "lo", "up"); err != nil {
		_ = n.Delete()
		return nil, err
	}
	return n, nil
}

// Name returns the namespace's name.
func (n *NS) Name() string { return n.name }

// IP runs `ip -n NAME args...`.
func (n *NS) IP(args ...string) error {
	return ip(append([]string{"-n", n.name}, args...)...)
}

// Command returns a command that runs inside the namespace.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.name, name}, args...)...)
}

// Sysctl sets a sysctl inside the namespace (key in dotted form).
func (n *NS) Sysctl(key, value string) error {
	out, err := n.Command(context.Background(), "sysctl", "-q", "-w", key+"="+value).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns %s: sysctl %s=%s: %v: %s", n.name, key, value, err, bytes.TrimSpace(out))
	}
	return nil
}

// Delete removes the namespace (links inside it go with it) and drops
// this process's claim on it.
func (n *NS) Delete() error {
	err := ip("netns", "delete", n.name)
	n.Release()
	return err
}

// Veth joins a and b with a veth pair, gives each end an address in CIDR
// form (e.g. "198.18.0.1/24") and brings both up.
func Veth(a *NS, aIf, aAddr string, b *NS, bIf, bAddr string) error {
	if err := ip("link", "add", aIf, "netns", a.name, "type", "veth", "peer", "name", bIf, "netns", b.name); err != nil {
		return err
	}
	for _, e := range []struct {
		ns        *NS
		ifc, addr string
	}{{a, aIf, aAddr}, {b, bIf, bAddr}} {
		if err := e.ns.IP("addr", "add", e.addr, "dev", e.ifc); err != nil {
			return err
		}
		if err := e.ns.IP("link", "set", e.ifc, "up"); err != nil {
			return err
		}
	}
	return nil
}

// List returns the names of existing namespaces made by sonde.
func List() ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("netns: ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], Prefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// Clean deletes every namespace whose name starts with prefix (which must
// itself start with Prefix) and that no live process claims, e.g. after a
// crashed run. Processes still inside them are left to the caller.
func Clean(prefix string) ([]string, error) {
	orphans, err := ClaimOrphans(prefix)
	var removed []string
	errs := []error{err}
	for _, n := range orphans {
		if err := n.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n.name)
	}
	return removed, errors.Join(errs...)
}

func ip(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// Open returns the existing namespace called name, which sonde made (its
// name starts with Prefix).
func Open(name string) (*NS, error) {
	if !strings.HasPrefix(name, Prefix) {
		return nil, fmt.Errorf("netns: name %q must start with %q", name, Prefix)
	}
	if _, err := os.Stat("/run/netns/" + name); err != nil {
		return nil, fmt.Errorf("netns: %s: %w", name, err)
	}
	return &NS{name: name}, nil
}

// MoveLink moves the network device dev from the caller's namespace into
// n (for a TUN device, its file descriptor stays valid).
func (n *NS) MoveLink(dev string) error {
	return ip("link", "set", "dev", dev, "netns", n.name)
}

// Attach returns an existing namespace by name without requiring the sonde
// prefix, for commands that only place devices in a namespace the user
// made (sonde emulate); such a namespace must not be deleted by sonde.
func Attach(name string) (*NS, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("netns: bad namespace name %q", name)
	}
	if _, err := os.Stat("/run/netns/" + name); err != nil {
		return nil, fmt.Errorf("netns: %s: %w", name, err)
	}
	return &NS{name: name}, nil
}

// Links lists the network devices in the namespace.
func (n *NS) Links() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "-n", n.name, "-o", "link", "show").Output()
	if err != nil {
		return nil, fmt.Errorf("netns %s: ip link show: %w", n.name, err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		// "1: lo: <LOOPBACK,UP> …"; a veth end reads "name@peer:".
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		names = append(names, name)
	}
	return names, nil
}

// Release drops this process's claim without deleting the namespace.
func (n *NS) Release() {
	if n.claim != nil {
		n.claim.Close()
		n.claim = nil
	}
}
