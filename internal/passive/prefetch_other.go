//go:build !amd64

package passive

import "unsafe"

// prefetch is a hint (prefetch_amd64.go): without the instruction it does
// nothing.
func prefetch(p unsafe.Pointer, n uintptr) {}
