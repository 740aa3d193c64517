package passive

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sonde-project/sonde/internal/fileargs"
	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/pcap"
)

// source is one capture file being read: its reader, its current packet
// and its record.
type source struct {
	rd     *pcap.Reader
	closer io.Closer
	p      pcap.Packet
	cf     model.CaptureFile
	idx    int   // in the caller's order
	t0, t1 int64 // first and last packet times
	all    uint64
	seen   int // highest interface with a packet
	damage *pcap.DamageError
	err    error // a read error other than damage
	done   bool
}

func newSource(r io.Reader, closer io.Closer, cf model.CaptureFile) (*source, error) {
	cf.DamageOffset = -1
	rd, err := pcap.NewReader(r)
	if err != nil {
		if closer != nil {
			closer.Close()
		}
		return nil, err
	}
	cf.Format = rd.Format().String()
	return &source{rd: rd, closer: closer, cf: cf, seen: -1, t0: -1}, nil
}

// next reads the next packet into s.p; false at the end or the damage.
func (s *source) next() bool {
	if s.done {
		return false
	}
	err := s.rd.Next(&s.p)
	if err == nil {
		if s.t0 < 0 {
			s.t0 = s.p.TimeNs
		}
		s.t1 = max(s.t1, s.p.TimeNs)
		return true
	}
	s.end(err)
	return false
}

// end records why the source ended (err: the reader's) and closes it.
func (s *source) end(err error) {
	s.done = true
	if d, ok := pcap.IsDamage(err); ok {
		s.damage = d
	} else if !errors.Is(err, io.EOF) {
		s.err = err
	}
	s.close()
}

// nextBatch reads the next packets into ps (pcap.Reader.NextBatch) and
// returns how many: 0 at the end or the damage, as next.
func (s *source) nextBatch(ps []pcap.Packet) int {
	if s.done {
		return 0
	}
	n, err := s.rd.NextBatch(ps)
	if n > 0 {
		if s.t0 < 0 {
			s.t0 = ps[0].TimeNs
		}
		for i := range ps[:n] {
			s.t1 = max(s.t1, ps[i].TimeNs)
		}
		return n
	}
	s.end(err)
	return 0
}

// close releases the file (and its decompressor) once.
func (s *source) close() {
	if s.closer != nil {
		s.closer.Close()
		s.closer = nil
	}
}

// MaxFiles bounds the capture files one analysis reads: a day of
// tcpdump -G 1 rotations is 86,400.
const MaxFiles = 100_000

// ExpandPaths lists the capture files of paths: a directory stands for
// the regular files in it (not its subdirectories), by name
// (fileargs.Expand).
func ExpandPaths(paths []string) ([]string, error) {
	return fileargs.Expand(paths, nil, "files", MaxFiles)
}

// maxOpenSources bounds the files open at once: those whose time spans
// overlap at one instant (rotated files overlap little).
const maxOpenSources = 256

// ReadFiles analyses capture files (plain, gzip or zstd, pcap or pcapng,
// mixed) as one capture in time order: a k-way merge of their packets by
// timestamp, each file opened when the merge reaches its first packet
// (found by a first pass that reads one packet of each), so that rotated
// files (tcpdump -G, -C) keep one or two open. Overlaps and gaps between
// files are noted. It returns every file's record and error (nil: read
// to its end or its damage), in the order given.
func (a *Analyzer) ReadFiles(paths []string) ([]model.CaptureFile, []error) {
	start := time.Now()
	defer func() { a.wall += time.Since(start) }()
	cfs := make([]model.CaptureFile, len(paths))
	errs := make([]error, len(paths))
	type pending struct {
		idx int
		t0  int64
	}
	var order []pending
	for i, path := range paths {
		cfs[i] = model.CaptureFile{Path: path, DamageOffset: -1}
		s, err := openSource(path, i)
		if err != nil {
			errs[i] = err
			continue
		}
		t0 := int64(-1 << 63)
		if s.next() {
			t0 = s.p.TimeNs
		}
		s.close()
		order = append(order, pending{i, t0})
	}
	slices.SortStableFunc(order, func(x, y pending) int { return cmp.Compare(x.t0, y.t0) })
	var h sourceHeap
	var ended []*source
	for len(order) > 0 || h.Len() > 0 {
		// Open the files whose first packet is due.
		for len(order) > 0 && (h.Len() == 0 || order[0].t0 <= h.s[0].p.TimeNs) {
			i := order[0].idx
			order = order[1:]
			if h.Len() >= maxOpenSources {
				errs[i] = fmt.Errorf("%s: more than %d files overlap in time: not read", paths[i], maxOpenSources)
				continue
			}
			s, err := openSource(paths[i], i)
			if err != nil {
				errs[i] = err // changed since the first pass
				continue
			}
			if s.next() {
				heap.Push(&h, s)
			} else {
				ended = append(ended, s)
			}
		}
		if h.Len() == 0 {
			continue
		}
		if h.Len() == 1 && len(order) == 0 {
			// The last file (or the only one): nothing to merge.
			s := heap.Pop(&h).(*source)
			if a.shards != nil {
				a.readShards(s)
			} else {
				a.readBatched(s)
			}
			ended = append(ended, s)
			continue
		}
		s := h.s[0]
		a.frame(s)
		if s.next() {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
			ended = append(ended, s)
		}
	}
	slices.SortFunc(ended, func(x, y *source) int { return cmp.Compare(x.idx, y.idx) })
	for _, s := range ended {
		a.endSource(s)
		cfs[s.idx] = s.cf
		if s.err != nil {
			errs[s.idx] = fmt.Errorf("%s: %w", s.cf.Path, s.err)
		}
	}
	a.noteSpans(ended)
	return cfs, errs
}

func openSource(path string, idx int) (*source, error) {
	r, c, comp, err := pcap.Open(path)
	if err != nil {
		return nil, err
	}
	s, err := newSource(r, c, model.CaptureFile{Path: path})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.idx = idx
	if comp != pcap.Uncompressed {
		s.cf.Format += "+" + comp.String()
	}
	return s, nil
}

// minGapNote is the silence between consecutive files worth a note.
const minGapNote = int64(time.Second)

// noteSpans notes the files whose time spans overlap (their packets were
// merged in time order) and the gaps between consecutive files.
func (a *Analyzer) noteSpans(srcs []*source) {
	var s []*source
	for _, x := range srcs {
		if x.t0 >= 0 {
			s = append(s, x)
		}
	}
	if len(s) < 2 {
		return
	}
	slices.SortStableFunc(s, func(x, y *source) int { return cmp.Compare(x.t0, y.t0) })
	var overlaps, gaps int
	last := s[0]
	for _, x := range s[1:] {
		switch d := x.t0 - last.t1; {
		case d < 0:
			if overlaps++; overlaps <= maxSpanNotes {
				a.res.Notes = append(a.res.Notes, fmt.Sprintf("%s and %s overlap by %.3f s: their packets were merged in time order",
					last.cf.Path, x.cf.Path, float64(min(-d, x.t1-x.t0))/1e9))
			}
		case d >= minGapNote:
			if gaps++; gaps <= maxSpanNotes {
				a.res.Notes = append(a.res.Notes, fmt.Sprintf("%.3f s without packets between %s and %s", float64(d)/1e9, last.cf.Path, x.cf.Path))
			}
		}
		if x.t1 > last.t1 {
			last = x
		}
	}
	if overlaps > maxSpanNotes || gaps > maxSpanNotes {
		a.res.Notes = append(a.res.Notes, fmt.Sprintf("%d overlaps and %d gaps of %d s or more between files in all (the first %d of each noted)",
			overlaps, gaps, minGapNote/1e9, maxSpanNotes))
	}
}

// maxSpanNotes bounds the overlap and gap notes of each kind.
const maxSpanNotes = 10

// sourceHeap orders open sources by their current packet's time, then
// by their first packet's (a rotated file's last packets and the next
// file's first can share a timestamp: the earlier file's come first),
// then by the order given.
type sourceHeap struct{ s []*source }

func (h *sourceHeap) Len() int { return len(h.s) }
func (h *sourceHeap) Less(i, j int) bool {
	x, y := h.s[i], h.s[j]
	return cmp.Or(cmp.Compare(x.p.TimeNs, y.p.TimeNs), cmp.Compare(x.t0, y.t0), cmp.Compare(x.idx, y.idx)) < 0
}
func (h *sourceHeap) Swap(i, j int) { h.s[i], h.s[j] = h.s[j], h.s[i] }
func (h *sourceHeap) Push(x any)    { h.s = append(h.s, x.(*source)) }
func (h *sourceHeap) Pop() any {
	x := h.s[len(h.s)-1]
	h.s = h.s[:len(h.s)-1]
	return x
}
