package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesNoEffect: a hint over any span, including nil, an empty span
// and a span past the end of an allocation, neither faults nor changes
// memory.
func TestLinesNoEffect(t *testing.T) {
	b := make([]byte, 1000)
	for i := range b {
		b[i] = byte(i)
	}
	Lines(nil, 0)
	Lines(nil, 4096)
	Lines(unsafe.Pointer(&b[0]), 0)
	Lines(unsafe.Pointer(&b[3]), uintptr(len(b)-3))
	Lines(unsafe.Pointer(&b[999]), 1<<20)
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
