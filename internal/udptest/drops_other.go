//go:build !linux

package udptest

// readUDPDrops: the kernel's UDP drop counters are read on Linux only.
func readUDPDrops() *udpDrops { return nil }
