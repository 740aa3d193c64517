package pcap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// smallCapture is a pcap of n identical raw-IP packets.
func smallCapture(t testing.TB, n int) []byte {
	var b bytes.Buffer
	w, err := NewWriter(&b, LinkRaw, 65535)
	if err != nil {
		t.Fatal(err)
	}
	pkt := make([]byte, 60)
	pkt[0] = 0x45
	for i := range n {
		if err := w.Write(int64(i)*1000, pkt, len(pkt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// compressed returns b gzipped and zstd-compressed.
func compressed(b []byte) (gz, zs []byte) {
	var g, z bytes.Buffer
	zw := gzip.NewWriter(&g)
	zw.Write(b)
	zw.Close()
	enc, _ := zstd.NewWriter(&z)
	enc.Write(b)
	enc.Close()
	return g.Bytes(), z.Bytes()
}

func count(t *testing.T, r io.Reader) (int, error) {
	t.Helper()
	rd, err := NewReader(r)
	if err != nil {
		return 0, err
	}
	var p Packet
	n := 0
	for {
		if err := rd.Next(&p); err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// TestOpenCompressed: gzip and zstd captures are read as they are, found
// by their magic number whatever their name.
func TestOpenCompressed(t *testing.T) {
	plain := smallCapture(t, 1000)
	gz, zs := compressed(plain)
	dir := t.TempDir()
	for name, c := range map[string]struct {
		data []byte
		comp Compression
	}{"plain.pcap": {plain, Uncompressed}, "a.pcap.gz": {gz, Gzip}, "no-suffix": {zs, Zstd}} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, cl, comp, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := count(t, r)
		cl.Close()
		if err != nil || n != 1000 || comp != c.comp {
			t.Errorf("%s: %d packets, %v, compression %v; want 1000, %v", name, n, err, comp, c.comp)
		}
	}
}

// TestZstdWindowBounded: a zstd frame that declares a 256 MiB window is
// refused with ErrZstdWindow, not allocated.
func TestZstdWindowBounded(t *testing.T) {
	// Magic, a frame header without content size and a window
	// descriptor of 2^28 bytes (under the decoder's own default limit,
	// over MaxZstdWindow), then one raw block of 4 bytes.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3, 4<<3 | 1, 0, 0, 'a', 'b', 'c', 'd'}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, d, err := Decompress(bytes.NewReader(frame))
	if err == nil {
		defer d.Close()
		_, err = io.ReadAll(r)
	}
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrZstdWindow) {
		t.Errorf("error %v, want ErrZstdWindow", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d MiB for a 13-byte frame", grew>>20)
	}
}

// TestGzipBombBounded: a gzip capture of 40 MB (a few tens of KB
// compressed) is read through the reader's fixed buffer: the heap does
// not follow the decompressed size.
func TestGzipBombBounded(t *testing.T) {
	plain := smallCapture(t, 500000) // 38 MB
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(plain)
	zw.Close()
	compressed := gz.Bytes()
	plain = nil
	runtime.GC()
	var before, peak runtime.MemStats
	runtime.ReadMemStats(&before)
	r, d, err := Decompress(bytes.NewReader(compressed))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rd, err := NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var p Packet
	n := 0
	for rd.Next(&p) == nil {
		if n++; n%100000 == 0 {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak.HeapInuse = max(peak.HeapInuse, m.HeapInuse)
		}
	}
	if n != 500000 {
		t.Fatalf("%d packets", n)
	}
	if grew := int64(peak.HeapInuse) - int64(before.HeapInuse); grew > 8<<20 {
		t.Errorf("heap grew by %d MiB reading a %d KB gzip of 38 MB", grew>>20, len(compressed)>>10)
	}
}

// FuzzDecompress: any bytes, compressed or not, are read to an end or an
// error, never a panic, and a stream yields at most what its packets
// allow (the reader's buffer bounds what a record may claim).
func FuzzDecompress(f *testing.F) {
	plain := smallCapture(f, 20)
	gz, zs := compressed(plain)
	f.Add(plain)
	f.Add(gz)
	f.Add(zs)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3, 4<<3 | 1, 0, 0, 'a', 'b', 'c', 'd'})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, d, err := Decompress(bytes.NewReader(b))
		if err != nil {
			return
		}
		defer d.Close()
		rd, err := NewReader(r)
		if err != nil {
			return
		}
		var p Packet
		for range 100000 {
			if rd.Next(&p) != nil {
				return
			}
		}
	})
}
