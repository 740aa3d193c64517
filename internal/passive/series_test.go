package passive

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSeriesCoarsened: a connection longer than maxSeriesBins intervals
// keeps its whole goodput series at a coarser bin (doubled until it fits),
// with the width in interval_s and a note, and no byte is dropped: the
// series sums to the unique bytes. Before, bins past 2^20 were dropped
// without a word. With several workers the note is the worker's, and
// was lost when their analyses were merged.
func TestSeriesCoarsened(t *testing.T) {
	for _, workers := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { seriesCoarsened(t, workers) })
	}
}

func seriesCoarsened(t *testing.T, workers int) {
	const (
		interval = time.Microsecond
		gap      = int64(10 * time.Millisecond)
		span     = int64(3 * time.Second) // 3e6 bins of 1 µs: two doublings to fit 2^20
		payload  = 1000
	)
	a := New(Config{Interface: -1, Interval: interval, Workers: workers})
	if workers > 1 && len(a.shards) != workers {
		t.Fatalf("%d workers: %d shards", workers, len(a.shards))
	}
	id := uint16(0)
	var pkts []timedPacket
	send := func(t int64, src, dst [4]byte, l4 []byte) {
		id++
		pkts = append(pkts, timedPacket{t, ipHeader(src, dst, 6, id, l4)})
	}
	const synACK = 0x12
	send(0, clientIP, serverIP, tcpSeg(40000, 80, 100, 0, 0x02, 1, 0, 0))
	send(1000, serverIP, clientIP, tcpSeg(80, 40000, 500, 101, synACK, 1, 1, 0))
	seq := uint32(501)
	n := 0
	for tt := gap; tt <= span; tt += gap {
		send(tt, serverIP, clientIP, tcpSeg(80, 40000, seq, 101, 0x10, uint32(tt/1e6), 1, payload))
		seq += payload
		n++
	}
	// From a file: with several workers, the packets go to them.
	path := filepath.Join(t.TempDir(), "long.pcap")
	if err := os.WriteFile(path, pcapOf(t, pkts), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errs := a.ReadFiles([]string{path}); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	res := a.Finish(nil)
	if len(res.TCP) != 1 {
		t.Fatalf("%d connections, want 1", len(res.TCP))
	}
	c := res.TCP[0]
	if want := 4 * interval.Seconds(); c.IntervalS != want {
		t.Fatalf("interval_s %g, want %g (1 µs doubled twice)", c.IntervalS, want)
	}
	dir := c.BA
	if c.AB.UniqueBytes > dir.UniqueBytes {
		dir = c.AB
	}
	if len(dir.GoodputSeries) > maxSeriesBins {
		t.Fatalf("%d bins, over the %d bound", len(dir.GoodputSeries), maxSeriesBins)
	}
	var bytes float64
	for _, bps := range dir.GoodputSeries {
		bytes += bps * c.IntervalS / 8
	}
	if want := float64(n * payload); bytes < want-0.5 || bytes > want+0.5 || dir.UniqueBytes != uint64(n*payload) {
		t.Fatalf("series holds %.0f bytes, unique %d, want %.0f: bins were dropped", bytes, dir.UniqueBytes, want)
	}
	found := false
	for _, note := range res.Notes {
		if strings.Contains(note, "goodput series in bins of 4µs") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no note about the coarser bins: %q", res.Notes)
	}
}

// TestSeriesNotCoarsenedShort: a connection within the bound keeps the
// interval and gets no note.
func TestSeriesNotCoarsenedShort(t *testing.T) {
	a := New(Config{Interface: -1, Interval: time.Millisecond})
	a.Packet(0, ipHeader(clientIP, serverIP, 6, 1, tcpSeg(40000, 80, 100, 0, 0x02, 1, 0, 0)))
	a.Packet(1e6, ipHeader(serverIP, clientIP, 6, 2, tcpSeg(80, 40000, 500, 101, 0x12, 1, 1, 0)))
	a.Packet(5e6, ipHeader(serverIP, clientIP, 6, 3, tcpSeg(80, 40000, 501, 101, 0x10, 5, 1, 1000)))
	res := a.Finish(nil)
	if len(res.TCP) != 1 || res.TCP[0].IntervalS != 1e-3 {
		t.Fatalf("connections %+v, want one at interval_s 0.001", res.TCP)
	}
	for _, note := range res.Notes {
		if strings.Contains(note, "goodput series in bins") {
			t.Fatalf("note on a short connection: %q", note)
		}
	}
}

func TestMergePairs(t *testing.T) {
	got := mergePairs([]uint64{1, 2, 3, 4, 5})
	if len(got) != 3 || got[0] != 3 || got[1] != 7 || got[2] != 5 {
		t.Fatalf("mergePairs: %v, want [3 7 5]", got)
	}
}
