//go:build unix

package passive

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps a regular file read-only (nil: it cannot be; the caller
// reads it). unmap releases it: nothing may hold a slice of it after (the
// analyser copies what it keeps, as it must from a reader's reused
// buffer). A file truncated while mapped faults (SIGBUS); one that grows
// is read to its size at the mapping.
func mapFile(path string) (b []byte, unmap func()) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 || int64(int(fi.Size())) != fi.Size() {
		return nil, nil
	}
	b, err = unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil
	}
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return b, func() { _ = unix.Munmap(b) }
}
