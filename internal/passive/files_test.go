package passive

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/zstd"

	"github.com/sonde-project/sonde/internal/model"
)

// pcapngOf writes packets as a raw-IP pcapng.
func pcapngOf(t *testing.T, pkts []timedPacket) []byte {
	t.Helper()
	var b bytes.Buffer
	// Nanosecond timestamps (pcapng's default is microseconds).
	w, err := pcapgo.NewNgWriterInterface(&b, pcapgo.NgInterface{LinkType: layers.LinkTypeRaw, SnapLength: 65535, TimestampResolution: 9},
		pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, p.t+1700000000e9), CaptureLength: len(p.data), Length: len(p.data)}
		if err := w.WritePacket(ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gzipped(b []byte) []byte {
	var o bytes.Buffer
	w := gzip.NewWriter(&o)
	w.Write(b)
	w.Close()
	return o.Bytes()
}

func zstded(b []byte) []byte {
	var o bytes.Buffer
	w, _ := zstd.NewWriter(&o)
	w.Write(b)
	w.Close()
	return o.Bytes()
}

// records is an analysis's records and counters, without its files and
// notes (which name the files).
func records(t *testing.T, r *model.Analysis) string {
	c := *r
	c.Files, c.Notes = nil, nil
	return figures(t, &c)
}

// TestFilesOneCapture: a capture cut into rotated files (pcap, pcapng,
// gzip, zstd, in a directory, given in any order), or split by flow into
// files that overlap in time, is analysed as the one capture: the same
// records and counters; overlaps and gaps are noted.
func TestFilesOneCapture(t *testing.T) {
	pkts := manyFlows(3, 300)
	cfg := Config{Interface: -1, IdleTimeout: 20 * time.Second}
	whole := New(cfg)
	if _, err := whole.Read(bytes.NewReader(pcapOf(t, pkts)), model.CaptureFile{Path: "whole"}); err != nil {
		t.Fatal(err)
	}
	want := records(t, whole.Finish(nil))

	// Rotated: four consecutive pieces, a gap of 30 s left in the
	// middle of the capture.
	dir := t.TempDir()
	q := len(pkts) / 4
	pieces := [][]timedPacket{pkts[:q], pkts[q : 2*q], pkts[2*q : 3*q], pkts[3*q:]}
	gap := pieces[2][0].t - pieces[1][len(pieces[1])-1].t
	writes := []func([]timedPacket) []byte{
		func(p []timedPacket) []byte { return pcapOf(t, p) },
		func(p []timedPacket) []byte { return pcapngOf(t, p) },
		func(p []timedPacket) []byte { return gzipped(pcapOf(t, p)) },
		func(p []timedPacket) []byte { return zstded(pcapngOf(t, p)) },
	}
	// Names out of time order: the merge orders by time, not by name.
	names := []string{"d", "c", "b", "a"}
	for i, p := range pieces {
		if err := os.WriteFile(filepath.Join(dir, names[i]), writes[i](p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := ExpandPaths([]string{dir})
	if err != nil || len(paths) != 4 {
		t.Fatalf("ExpandPaths: %v %v", paths, err)
	}
	a := New(cfg)
	cfs, errs := a.ReadFiles(paths)
	r := a.Finish(nil)
	for i, e := range errs {
		if e != nil {
			t.Fatalf("%s: %v", paths[i], e)
		}
	}
	if got := records(t, r); got != want {
		for i := 0; i < min(len(got), len(want)); i++ {
			if got[i] != want[i] {
				t.Errorf("rotated files: the analysis differs from the whole capture's at %d: %.300q, want %.300q", i, got[max(i-100, 0):], want[max(i-100, 0):])
				break
			}
		}
	}
	formats := map[string]bool{}
	for _, cf := range cfs {
		formats[cf.Format] = true
	}
	for _, f := range []string{"pcap", "pcapng", "pcap+gzip", "pcapng+zstd"} {
		if !formats[f] {
			t.Errorf("formats %v: no %s", formats, f)
		}
	}
	gapNote := notesWith(r, "s without packets between")
	if gap >= int64(time.Second) && len(gapNote) == 0 {
		t.Errorf("no gap note for %.1f s: %q", float64(gap)/1e9, r.Notes)
	}
	if len(notesWith(r, "overlap")) != 0 {
		t.Errorf("rotated files noted as overlapping: %q", r.Notes)
	}

	// Overlapping: the same capture split by flow into two files.
	var x, y []timedPacket
	for i, p := range pkts {
		if h := flowHashOf(p.data); h%2 == 0 || i == 0 {
			x = append(x, p)
		} else {
			y = append(y, p)
		}
	}
	px, py := filepath.Join(dir, "x.pcap"), filepath.Join(dir, "y.pcapng")
	os.WriteFile(px, pcapOf(t, x), 0o644)
	os.WriteFile(py, pcapngOf(t, y), 0o644)
	a = New(cfg)
	if _, errs := a.ReadFiles([]string{py, px}); errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	r = a.Finish(nil)
	if got := records(t, r); got != want {
		t.Errorf("files split by flow: the analysis differs from the whole capture's")
	}
	if n := notesWith(r, "overlap by"); len(n) != 1 || !strings.Contains(n[0], "merged in time order") {
		t.Errorf("overlap note: %q", r.Notes)
	}
}

// flowHashOf is a packet's symmetric flow hash (for splitting by flow).
func flowHashOf(ip []byte) uint64 {
	var p ipPacket
	if !decodeIP(ip, &p) {
		return 0
	}
	return flowHash(&p)
}
