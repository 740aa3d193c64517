//go:build !linux

package ifstat

import "errors"

// SysfsNet is where Linux lists network interfaces.
const SysfsNet = "/sys/class/net"

// Sysfs is Linux-only; elsewhere opening one fails.
type Sysfs struct{}

var errNotLinux = errors.New("ifstat: interface counters are read from Linux sysfs; this system is not Linux")

// OpenSysfs fails: interface counters need Linux.
func OpenSysfs(dir, name string) (*Sysfs, error) { return nil, errNotLinux }

// Open fails: interface counters need Linux.
func Open(name string) (*Sysfs, error) { return nil, errNotLinux }

// Read fails: interface counters need Linux.
func (s *Sysfs) Read() (rx, tx uint64, err error) { return 0, 0, errNotLinux }

// SpeedBps is unknown off Linux.
func (s *Sysfs) SpeedBps() float64 { return 0 }

// Close does nothing.
func (s *Sysfs) Close() error { return nil }
