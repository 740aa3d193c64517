//go:build !amd64

package prefetch

import "unsafe"

// Lines is a hint (prefetch_amd64.go): without the instruction it does
// nothing.
func Lines(p unsafe.Pointer, n uintptr) {}
