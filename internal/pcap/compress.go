package pcap

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"
)

// Compression of a capture file, found by its magic number.
type Compression uint8

// Compressions read directly.
const (
	Uncompressed Compression = iota
	Gzip
	Zstd
)

func (c Compression) String() string {
	switch c {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	}
	return ""
}

// MaxZstdWindow bounds the memory a zstd frame may ask for (its window):
// zstd -19 uses 8 MiB, --long=26 64 MiB. A larger window, or a crafted
// header that claims one, is refused rather than allocated. A gzip stream
// needs 32 KiB whatever it says. Either way the decompressed stream is
// read through the Reader's fixed buffer, record by record: a
// decompression bomb costs time, not memory.
const MaxZstdWindow = 64 << 20

// ErrZstdWindow reports a zstd frame whose window is over MaxZstdWindow.
var ErrZstdWindow = fmt.Errorf("zstd window over %d MiB (the limit on what a frame may allocate)", MaxZstdWindow>>20)

// Open opens a capture file, plain or compressed (gzip, zstd: found by
// their magic numbers, whatever the name), and returns the stream of the
// capture and what it was compressed with. Close the returned closer.
func Open(path string) (io.Reader, io.Closer, Compression, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	r, c, err := Decompress(f)
	if err != nil {
		f.Close()
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return r, closers{c, f}, c.comp, nil
}

// Decompress wraps r in a decompressor if it starts with a gzip or zstd
// magic number. Close the returned decompressor's resources with close.
func Decompress(r io.Reader) (io.Reader, *decomp, error) {
	br := bufio.NewReaderSize(r, 4096)
	head, _ := br.Peek(4)
	d := &decomp{}
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip: %w", err)
		}
		d.comp, d.r, d.close = Gzip, z, z.Close
	case len(head) == 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd:
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(MaxZstdWindow), zstd.WithDecoderMaxMemory(MaxZstdWindow*2))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd: %w", err)
		}
		d.comp, d.r, d.close = Zstd, zstdErrors{z}, func() error { z.Close(); return nil }
	default:
		d.r, d.close = br, func() error { return nil }
	}
	return d.r, d, nil
}

type decomp struct {
	comp  Compression
	r     io.Reader
	close func() error
}

func (d *decomp) Close() error { return d.close() }

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// zstdErrors names the window limit in the decoder's error.
type zstdErrors struct{ d *zstd.Decoder }

func (z zstdErrors) Read(p []byte) (int, error) {
	n, err := z.d.Read(p)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		err = ErrZstdWindow
	}
	return n, err
}
