// Package pcaptest writes small capture files for tests.
package pcaptest

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sonde-project/sonde/internal/pcap"
)

// SYNs writes a raw-IP pcap of n TCP SYNs from 198.18.1.1 to 198.18.1.2
// port 80, one connection each (source ports from 40000), 1 ms apart,
// in t's temporary directory, and returns its path.
func SYNs(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "syns.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(f, pcap.LinkRaw, 65535)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		b := make([]byte, 40)
		b[0], b[8], b[9] = 0x45, 64, 6
		binary.BigEndian.PutUint16(b[2:], 40)
		copy(b[12:], []byte{198, 18, 1, 1, 198, 18, 1, 2})
		binary.BigEndian.PutUint16(b[20:], uint16(40000+i))
		binary.BigEndian.PutUint16(b[22:], 80)
		b[32], b[33] = 5<<4, 0x02
		if err := w.Write(int64(1700000000e9+i*1e6), b, len(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		t.Fatal(err)
	}
	return path
}
