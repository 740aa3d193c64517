package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrClaimed is returned by Claim for a namespace that a live process
// (possibly this one) holds.
var ErrClaimed = errors.New("claimed by a live process")

// BuildLock serialises making namespaces (shared) against looking for
// orphans (exclusive): between `ip netns add` and the new owner's claim a
// namespace is unclaimed, and a cleaner must not take it for an orphan.
// It is a fixed path, not per state directory, because namespace names
// are global.
const BuildLock = "/run/sonde/netns.lock"

// lockWait bounds the wait for BuildLock: holders keep it for the time of
// one `ip netns add` or one scan, milliseconds.
const lockWait = 10 * time.Second

// netnsDir is where iproute2 mounts named namespaces.
const netnsDir = "/run/netns"

// addClaimed runs `ip netns add` and claims the new namespace, holding
// BuildLock shared in between.
func addClaimed(name string) (*NS, error) {
	unlock, err := buildLock(syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := ip("netns", "add", name); err != nil {
		return nil, err
	}
	n, err := Claim(name)
	if err != nil {
		_ = ip("netns", "delete", name)
		return nil, fmt.Errorf("netns %s: %w", name, err)
	}
	return n, nil
}

// Claim takes ownership of the existing sonde namespace name, for this
// process until Delete or exit. It fails with ErrClaimed while another
// live process (or this one) owns it.
func Claim(name string) (*NS, error) {
	if !strings.HasPrefix(name, Prefix) || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("netns: name %q must start with %q", name, Prefix)
	}
	// O_RDONLY on the nsfs file a bind mount puts at /run/netns/NAME;
	// the lock lives on that inode, which the mount keeps.
	f, err := os.Open(filepath.Join(netnsDir, name))
	if err != nil {
		return nil, fmt.Errorf("netns: %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("netns: %s: %w", name, ErrClaimed)
		}
		return nil, fmt.Errorf("netns: %s: lock: %w", name, err)
	}
	return &NS{name: name, claim: f}, nil
}

// ClaimOrphans claims every namespace whose name starts with prefix (which
// must start with Prefix) that no live process owns, and returns them: the
// caller may delete them.
func ClaimOrphans(prefix string) ([]*NS, error) {
	if !strings.HasPrefix(prefix, Prefix) {
		return nil, fmt.Errorf("netns: clean prefix %q must start with %q", prefix, Prefix)
	}
	unlock, err := buildLock(syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer unlock()
	names, err := List()
	if err != nil {
		return nil, err
	}
	var out []*NS
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		n, err := Claim(name)
		switch {
		case errors.Is(err, ErrClaimed), errors.Is(err, os.ErrNotExist):
			// Owned, or deleted meanwhile by its owner.
		case err != nil:
			errs = append(errs, err)
		default:
			out = append(out, n)
		}
	}
	return out, errors.Join(errs...)
}

// buildLock takes BuildLock (how: LOCK_SH or LOCK_EX), polling for at most
// lockWait so that a stopped holder cannot hang the caller.
func buildLock(how int) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(BuildLock), 0o755); err != nil {
		return nil, fmt.Errorf("netns: build lock: %w", err)
	}
	f, err := os.OpenFile(BuildLock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("netns: build lock: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("netns: build lock %s: %w", BuildLock, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
