//go:build linux

// Command readcost measures the least a reader of a pcap file pays to see
// every packet: it walks every record of FILE and hashes each packet's
// IPv4 addresses and ports (the symmetric flow hash the analyzer's
// workers split on, passive.flowHash, for Ethernet and IPv4 only), with
// nothing analysed, reading the file three ways:
//
//	read      read(2) into one 256 KiB buffer (what sonde analyze does)
//	mmap      a shared read-only mapping, pages faulted in as touched,
//	          each 8 MiB behind the walk dropped (MADV_DONTNEED) so that
//	          the mapped pages do not pile up in the resident set
//	populate  the same, each next 8 MiB populated ahead in one call
//	          (MADV_POPULATE_READ) instead of by faults
//
// It prints, per way, the wall time, user and system CPU and the
// packets on each side of the two-worker split. docs/analyze.md ("Every
// core") uses it for the bound on two workers: a design in which every
// worker reads the whole file pays this once more than one worker does.
//
//	readcost [-ways read,mmap,populate] FILE
//
// Exit status 2 on bad usage, 1 when the file cannot be read.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// window is the span mapped ahead of the walk and dropped behind it.
const window = 8 << 20

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14).
const madvPopulateRead = 22

func main() {
	fs := flag.NewFlagSet("readcost", flag.ContinueOnError)
	ways := fs.String("ways", "read,mmap,populate", "the ways to read, comma-separated: read, mmap, populate")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: readcost [-ways read,mmap,populate] FILE (a plain pcap)")
		os.Exit(2)
	}
	for _, way := range strings.Split(*ways, ",") {
		if way != "read" && way != "mmap" && way != "populate" {
			fmt.Fprintf(os.Stderr, "readcost: unknown way %q (read, mmap, populate)\n", way)
			os.Exit(2)
		}
	}
	for _, way := range strings.Split(*ways, ",") {
		if err := measure(fs.Arg(0), way); err != nil {
			fmt.Fprintln(os.Stderr, "readcost:", err)
			os.Exit(1)
		}
	}
}

func measure(path, way string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := int(st.Size())
	if size < 24 {
		return fmt.Errorf("%s: %d bytes, shorter than a pcap header", path, size)
	}
	var w walker
	var before, after unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &before); err != nil {
		return err
	}
	start := time.Now()
	switch way {
	case "read":
		err = w.read(f)
	default:
		err = w.mapped(f, size, way == "populate")
	}
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s (%s): %w", path, way, err)
	}
	if err := unix.Getrusage(unix.RUSAGE_SELF, &after); err != nil {
		return err
	}
	cpu := func(a, b unix.Timeval) float64 { return float64(b.Nano()-a.Nano()) / 1e9 }
	fmt.Printf("readcost %-8s %d packets: %.3f s wall, user %.3f s, sys %.3f s (%.1f ns a packet); halves %d and %d, not IPv4 %d\n",
		way, w.n, wall.Seconds(), cpu(before.Utime, after.Utime), cpu(before.Stime, after.Stime),
		float64(wall.Nanoseconds())/float64(max(w.n, 1)), w.half[0], w.half[1], w.other)
	return nil
}

// walker walks pcap records and counts the packets of each half of the
// two-worker split.
type walker struct {
	n, other int
	half     [2]int
	clock    uint64 // the timestamps summed (every record's are read, as a worker's clock would)
}

// walk walks the whole records of buf from off and returns where the
// first one not whole in buf starts.
func (w *walker) walk(buf []byte, off int) int {
	for off+16 <= len(buf) {
		incl := int(binary.LittleEndian.Uint32(buf[off+8:]))
		if incl > 1<<18 {
			incl = 1 << 18 // a damaged length: the walk only needs to end
		}
		if off+16+incl > len(buf) {
			break
		}
		w.clock += binary.LittleEndian.Uint64(buf[off:])
		p := buf[off+16 : off+16+incl]
		off += 16 + incl
		w.n++
		if len(p) < 14+20+4 || p[12] != 8 || p[13] != 0 {
			w.other++
			continue
		}
		ip := p[14:]
		ihl := int(ip[0]&15) * 4
		if ihl < 20 || len(ip) < ihl+4 {
			w.other++
			continue
		}
		// passive.flowHash of the addresses as IPv4-mapped IPv6 words.
		src := ipv4Mapped | uint64(binary.BigEndian.Uint32(ip[12:]))
		dst := ipv4Mapped | uint64(binary.BigEndian.Uint32(ip[16:]))
		ports := binary.BigEndian.Uint32(ip[ihl:])
		h := endHash(0, src^uint64(ports>>16)<<48) + endHash(0, dst^uint64(ports&0xffff)<<48) + uint64(ip[9])
		h ^= h >> 31
		h *= 0x9e3779b97f4a7c15
		h ^= h >> 29
		k, _ := bits.Mul64(h, 2)
		w.half[k]++
	}
	return off
}

// ipv4Mapped is ::ffff:0:0/96's second word.
const ipv4Mapped = 0xffff << 32

func endHash(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db)
	return hi ^ lo
}

func (w *walker) read(f *os.File) error {
	buf := make([]byte, 256<<10)
	if _, err := io.ReadFull(f, buf[:24]); err != nil {
		return err
	}
	have := 0
	for {
		n, err := f.Read(buf[have:])
		have += n
		used := w.walk(buf[:have], 0)
		have = copy(buf, buf[used:have])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if have == len(buf) {
			return errors.New("a record longer than the buffer")
		}
	}
}

func (w *walker) mapped(f *os.File, size int, populate bool) error {
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	ahead := func(lo int) {
		if populate && lo < size {
			_ = unix.Madvise(m[lo:min(size, lo+window)], madvPopulateRead)
		}
	}
	ahead(0)
	off, dropped, populated := 24, 0, window
	for off < size {
		end := min(size, (off/window+2)*window)
		for populated < end {
			ahead(populated)
			populated += window
		}
		next := w.walk(m[:end], off)
		if next == off {
			break // a record cut at the end of the file
		}
		off = next
		for dropped+window <= off-window {
			if err := unix.Madvise(m[dropped:dropped+window], unix.MADV_DONTNEED); err != nil {
				return err
			}
			dropped += window
		}
	}
	return nil
}
