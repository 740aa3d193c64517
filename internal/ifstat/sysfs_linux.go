package ifstat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// SysfsNet is where Linux lists network interfaces.
const SysfsNet = "/sys/class/net"

// Sysfs reads one interface's byte counters from sysfs. It keeps the two
// files open and preads them (sysfs renders the value afresh at offset 0):
// two syscalls and no allocation per read. Not safe for concurrent use.
type Sysfs struct {
	dir, name string
	rx, tx    *os.File
	buf       [32]byte
}

// checkName rejects what cannot be an interface name before it becomes a
// path.
func checkName(name string) error {
	if name == "" || len(name) > 15 || name == "." || name == ".." || strings.ContainsAny(name, "/\x00 \t\n") {
		return fmt.Errorf("ifstat: %q is not an interface name", name)
	}
	return nil
}

// OpenSysfs opens interface name's counters under dir (SysfsNet, or the
// same directory as another network namespace's process sees it, e.g.
// /proc/PID/root/sys/class/net). An unknown interface is one clear error.
func OpenSysfs(dir, name string) (*Sysfs, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	s := &Sysfs{dir: dir, name: name}
	if err := s.open(); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("ifstat: no interface %q (not in %s)", name, dir)
		}
		return nil, err
	}
	if _, _, err := s.read(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Open opens interface name's counters in this process's namespace.
func Open(name string) (*Sysfs, error) { return OpenSysfs(SysfsNet, name) }

func (s *Sysfs) open() error {
	st := filepath.Join(s.dir, s.name, "statistics")
	rx, err := os.Open(filepath.Join(st, "rx_bytes"))
	if err != nil {
		return fmt.Errorf("ifstat: %s: %w", s.name, err)
	}
	tx, err := os.Open(filepath.Join(st, "tx_bytes"))
	if err != nil {
		rx.Close()
		return fmt.Errorf("ifstat: %s: %w", s.name, err)
	}
	s.rx, s.tx = rx, tx
	return nil
}

// Read returns the raw counters. If the open files fail (the interface
// was removed and perhaps re-created, as a driver reload does), it reopens
// them once: a re-created interface's counters start again, which the
// Tracker reports as a reset.
func (s *Sysfs) Read() (rx, tx uint64, err error) {
	if s.rx != nil {
		if rx, tx, err = s.read(); err == nil {
			return rx, tx, nil
		}
		s.Close()
	}
	if err := s.open(); err != nil {
		return 0, 0, err
	}
	return s.read()
}

func (s *Sysfs) read() (rx, tx uint64, err error) {
	if rx, err = s.value(s.rx, "rx_bytes"); err != nil {
		return 0, 0, err
	}
	if tx, err = s.value(s.tx, "tx_bytes"); err != nil {
		return 0, 0, err
	}
	return rx, tx, nil
}

func (s *Sysfs) value(f *os.File, what string) (uint64, error) {
	n, err := unix.Pread(int(f.Fd()), s.buf[:], 0)
	if err != nil {
		return 0, fmt.Errorf("ifstat: %s %s: %w", s.name, what, err)
	}
	v, ok := parseCounter(s.buf[:n])
	if !ok {
		return 0, fmt.Errorf("ifstat: %s %s: not a counter: %q", s.name, what, s.buf[:n])
	}
	return v, nil
}

// SpeedBps returns the interface's link speed in bits/s from sysfs, or 0
// when the driver does not say (virtual devices, link down): the ceiling
// for Config.MaxBps.
func (s *Sysfs) SpeedBps() float64 {
	b, err := os.ReadFile(filepath.Join(s.dir, s.name, "speed"))
	if err != nil {
		return 0
	}
	mbps, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || mbps <= 0 || mbps > 10_000_000 {
		return 0
	}
	return float64(mbps) * 1e6
}

// Close closes the counter files.
func (s *Sysfs) Close() error {
	var err error
	for _, f := range []*os.File{s.rx, s.tx} {
		if f != nil {
			err = errors.Join(err, f.Close())
		}
	}
	s.rx, s.tx = nil, nil
	return err
}
