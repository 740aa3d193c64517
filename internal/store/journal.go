package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/model"
)

// The journal is the store of a monitor on a small box (docs/store.md,
// "The journal"): a directory of append-only segment files in two sets,
// raw rows (probes, counters) and long-lived ones (rollups, events,
// restarts), each within a byte budget that drops its oldest segment when
// over, and meta.json for the small state (monitors, streams, capacities,
// ship marks, the instance ID, retention's floors). It keeps a monitor's
// rows and ships them (Monitors, Shipping); the rest of Store it refuses
// (noResults). It holds no rows in memory: a read scans the segments
// whose time span, kept per segment and monitor, meets its range.

// JournalLimits bound a journal's segments on disk; zero fields take the
// defaults.
type JournalLimits struct {
	RawBytes  int64 // probes and counters (default DefaultJournalRaw)
	LongBytes int64 // rollups, events, restarts (default DefaultJournalLong)
}

// Defaults fit a router with 128 MB of flash. At 8 targets × 10 probes/s
// a probe takes 17–23 bytes and a stream's minute rollup several hundred
// (its histograms): the raw budget holds hours, the long one days
// (docs/store.md, "The journal", has the figures). Rollups are what a
// report over days reads, so they get the larger share.
const (
	DefaultJournalRaw  = 16 << 20
	DefaultJournalLong = 32 << 20
	minJournalBytes    = 256 << 10
	maxJournalBytes    = 1 << 40
	// segsPerSet: a set's budget is cut into this many segments; the
	// oldest is the unit that retention and the budget drop.
	segsPerSet = 16
	// journalSyncEvery: segments and meta.json are fsynced this often
	// (and at Close), not per batch: flash wear. A crash of the process
	// loses nothing written (each batch is one write(2) into the page
	// cache); a power loss or a kernel crash loses at most the rows of
	// the last journalSyncEvery and the ship marks moved in it (rows then
	// ship again, which the fleet store takes harmlessly).
	journalSyncEvery = 10 * time.Second
)

// Journal is the store backend of a journal directory.
const Journal Backend = "journal"

var errJournalReadOnly = errors.New("store: the journal is open for reading only")

// jspan is the range of a time (or ID) over a segment's rows of one kind.
type jspan struct{ min, max, n int64 }

func (s *jspan) add(lo, hi int64) {
	if s.n == 0 || lo < s.min {
		s.min = lo
	}
	if s.n == 0 || hi > s.max {
		s.max = hi
	}
	s.n++
}

func (s *jspan) merge(o jspan) {
	if o.n > 0 {
		s.add(o.min, o.max)
		s.n += o.n - 1
	}
}

// meets: the span has rows in [from, to).
func (s jspan) meets(from, to int64) bool { return s.n > 0 && s.max >= from && s.min < to }

// jstats is a segment's spans of one monitor, by record type; for events
// the span runs from the earliest start to the latest end.
type jstats struct {
	t    [recRestarts + 1]jspan
	evID jspan
}

func (s *jstats) merge(o *jstats) {
	for i := range s.t {
		s.t[i].merge(o.t[i])
	}
	s.evID.merge(o.evID)
}

func (s *jstats) note(typ byte, r *jrow) {
	if typ == recEvents {
		s.t[typ].add(r.event.Event.StartNs, r.event.Event.EndNs)
		s.evID.add(r.event.ID, r.event.ID)
		return
	}
	t := r.at(typ)
	s.t[typ].add(t, t)
}

type jseg struct {
	seq  uint64
	path string
	size int64
	mons map[int64]*jstats
}

// jset is one set of segments, oldest first; the last is appended to.
type jset struct {
	name   string
	budget int64
	segs   []*jseg
	f      *os.File // the last segment, open for appending (nil: read-only)
}

func (s *jset) segSize() int64 { return max(s.budget/segsPerSet, 64<<10) }

func (s *jset) bytes() int64 {
	var n int64
	for _, g := range s.segs {
		n += g.size
	}
	return n
}

type eventKey struct {
	mon        int64
	kind       string
	stream     int32
	start, end int64
}

type journal struct {
	noResults
	dir string
	loc Location
	ro  bool

	mu        sync.Mutex
	meta      jmeta
	metaDirty bool // ship marks or the next event ID moved since the last write
	raw, long jset
	sids      map[int64][]int32     // monitor → stream index → store stream ID
	evKeys    map[eventKey]struct{} // the events stored, by natural key
	enc       enc
	lastSync  time.Time
	unsynced  bool
	closed    bool
}

// checkJournalBudget checks one set's byte budget.
func checkJournalBudget(n int64) error {
	if n < minJournalBytes || n > maxJournalBytes {
		return fmt.Errorf("store: journal budget of %d bytes: want %d (256KiB) to %d (1TiB)", n, minJournalBytes, int64(maxJournalBytes))
	}
	return nil
}

// query is the limits as a journal URL's parameters ("" for the defaults).
func (l JournalLimits) query() string {
	var q []string
	if l.RawBytes != 0 {
		q = append(q, "raw="+strconv.FormatInt(l.RawBytes, 10))
	}
	if l.LongBytes != 0 {
		q = append(q, "long="+strconv.FormatInt(l.LongBytes, 10))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + strings.Join(q, "&")
}

// openJournal opens (readOnly: without creating, repairing or writing
// anything, for a report beside the running daemon) the journal at
// loc.Path. A torn or damaged record ends its segment: opened to write,
// the segment is cut there, with a log line.
func openJournal(loc Location, readOnly bool) (*journal, error) {
	lim := loc.Journal
	for _, b := range []int64{lim.RawBytes, lim.LongBytes} {
		if b != 0 {
			if err := checkJournalBudget(b); err != nil {
				return nil, err
			}
		}
	}
	if lim.RawBytes == 0 {
		lim.RawBytes = DefaultJournalRaw
	}
	if lim.LongBytes == 0 {
		lim.LongBytes = DefaultJournalLong
	}
	dir := loc.Path
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && !readOnly:
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: journal directory: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("store: journal %s: %w", dir, errors.Unwrap(err))
	case !st.IsDir():
		return nil, fmt.Errorf("store: journal %s is not a directory", dir)
	}
	m, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{dir: dir, loc: loc, ro: readOnly, meta: m, sids: map[int64][]int32{}, evKeys: map[eventKey]struct{}{},
		raw: jset{name: "raw", budget: lim.RawBytes}, long: jset{name: "long", budget: lim.LongBytes}, lastSync: time.Now()}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("store: journal %s: %w", dir, err)
	}
	for _, e := range ents {
		name := e.Name()
		set, seq, ok := segName(name)
		if !ok {
			continue
		}
		s := &j.raw
		if set == "long" {
			s = &j.long
		}
		s.segs = append(s.segs, &jseg{seq: seq, path: filepath.Join(dir, name), mons: map[int64]*jstats{}})
	}
	maxEvent := int64(0)
	for _, s := range []*jset{&j.raw, &j.long} {
		sort.Slice(s.segs, func(a, b int) bool { return s.segs[a].seq < s.segs[b].seq })
		for _, g := range s.segs {
			if err := j.recover(g, func(typ byte, r *jrow) {
				if typ == recEvents {
					maxEvent = max(maxEvent, r.event.ID)
					j.evKeys[keyOf(r.mon, &r.event.Event)] = struct{}{}
				}
			}); err != nil {
				return nil, err
			}
		}
	}
	j.meta.NextEvent = max(j.meta.NextEvent, maxEvent+1)
	if !readOnly {
		for _, s := range []*jset{&j.raw, &j.long} {
			if err := j.openTail(s); err != nil {
				j.closeFiles()
				return nil, err
			}
		}
	}
	return j, nil
}

func segName(name string) (set string, seq uint64, ok bool) {
	set, rest, ok := strings.Cut(name, "-")
	hex, isSeg := strings.CutSuffix(rest, ".seg")
	if !ok || !isSeg || (set != "raw" && set != "long") || len(hex) != 16 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(hex, 16, 64)
	return set, seq, err == nil
}

func keyOf(mon int64, e *model.MonitorEvent) eventKey {
	return eventKey{mon: mon, kind: string(e.Kind), stream: e.Stream, start: e.StartNs, end: e.EndNs}
}

// recover reads a segment's records at open, building its spans (each
// row also goes to each), and cuts a torn or damaged tail.
func (j *journal) recover(g *jseg, each func(byte, *jrow)) error {
	f, err := os.Open(g.path)
	if err != nil {
		return fmt.Errorf("store: journal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store: journal: %w", err)
	}
	var magic [len(segMagic)]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != segMagic {
		if st.Size() >= int64(len(segMagic)) && string(magic[:]) != segMagic {
			return fmt.Errorf("store: journal %s: not a journal segment", g.path)
		}
		// Cut short while it was created: an empty segment.
		g.size = int64(len(segMagic))
		if !j.ro {
			log.Printf("store: journal %s: a segment cut short at its creation (%d bytes): rewritten empty", g.path, st.Size())
			return writeSynced(g.path, []byte(segMagic))
		}
		return nil
	}
	fr := frameReader{r: bufio.NewReaderSize(f, 64<<10), off: int64(len(segMagic))}
	for {
		typ, payload, err := fr.next()
		if err == nil {
			err = decodeRecord(typ, payload, func(r *jrow) error {
				stats(g.mons, r.mon).note(typ, r)
				each(typ, r)
				return nil
			})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			// The rows of a damaged record were not counted: noted rows
			// of it (decoded before the damage) stay in the spans, which
			// are only bounds.
			cut := st.Size() - fr.off
			if j.ro {
				break
			}
			log.Printf("store: journal %s: %s at offset %d: cut %d bytes (the rows before it are kept)", g.path, oneLine(err), fr.off, cut)
			if err := os.Truncate(g.path, fr.off); err != nil {
				return fmt.Errorf("store: journal: cut a damaged tail: %w", err)
			}
			break
		}
	}
	g.size = fr.off
	return nil
}

func stats(m map[int64]*jstats, mon int64) *jstats {
	s := m[mon]
	if s == nil {
		s = &jstats{}
		m[mon] = s
	}
	return s
}

// openTail opens a set's last segment to append, starting one if none.
func (j *journal) openTail(s *jset) error {
	if len(s.segs) == 0 {
		return j.newSegment(s, 1)
	}
	g := s.segs[len(s.segs)-1]
	f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("store: journal: %w", err)
	}
	s.f = f
	return nil
}

func (j *journal) newSegment(s *jset, seq uint64) error {
	path := filepath.Join(j.dir, fmt.Sprintf("%s-%016x.seg", s.name, seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("store: journal: new segment: %w", err)
	}
	if _, err := f.Write([]byte(segMagic)); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("store: journal: new segment: %w", err)
	}
	if err := syncDir(j.dir); err != nil {
		f.Close()
		return err
	}
	s.segs = append(s.segs, &jseg{seq: seq, path: path, size: int64(len(segMagic)), mons: map[int64]*jstats{}})
	s.f = f
	return nil
}

// appendTo appends a batch's frames to the set whole, after starting a
// new segment if they would take the last one past its size, then drops
// the oldest segments over the budget.
func (j *journal) appendTo(s *jset, frames []byte, st map[int64]*jstats) error {
	if len(frames) == 0 {
		return nil
	}
	g := s.segs[len(s.segs)-1]
	if g.size > int64(len(segMagic)) && g.size+int64(len(frames)) > s.segSize() {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("store: journal: %w", err)
		}
		s.f.Close()
		s.f = nil
		if err := j.newSegment(s, g.seq+1); err != nil {
			return err
		}
		g = s.segs[len(s.segs)-1]
	}
	if _, err := s.f.Write(frames); err != nil {
		// A part written is cut off, so the next batch follows whole
		// records (a failed cut is found at the next open).
		_ = s.f.Truncate(g.size)
		return fmt.Errorf("store: journal: write: %w", err)
	}
	g.size += int64(len(frames))
	for mon, x := range st {
		stats(g.mons, mon).merge(x)
	}
	j.unsynced = true
	for s.bytes() > s.budget && len(s.segs) > 1 {
		if err := j.dropOldest(s); err != nil {
			return err
		}
	}
	return nil
}

// dropOldest removes the set's oldest segment (and its events from the
// set of events known).
func (j *journal) dropOldest(s *jset) error {
	g := s.segs[0]
	if s == &j.long {
		_ = scanSegment(g.path, g.size, func(typ byte, payload []byte) error {
			if typ != recEvents {
				return nil
			}
			return decodeRecord(typ, payload, func(r *jrow) error {
				delete(j.evKeys, keyOf(r.mon, &r.event.Event))
				return nil
			})
		})
	}
	if err := os.Remove(g.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		// Where an open file cannot be removed (Windows, a reader on it),
		// the segment leaves the set now and goes at the next open's
		// budget: a write does not fail for it.
		log.Printf("store: journal: drop %s: %v", g.path, err)
	}
	s.segs = s.segs[1:]
	return nil
}

// maybeSync fsyncs the segments, and writes meta.json if it changed,
// once journalSyncEvery has passed (now if force).
func (j *journal) maybeSync(force bool) error {
	if !force && time.Since(j.lastSync) < journalSyncEvery {
		return nil
	}
	j.lastSync = time.Now()
	var first error
	if j.unsynced {
		for _, s := range []*jset{&j.raw, &j.long} {
			if s.f != nil {
				if err := s.f.Sync(); err != nil && first == nil {
					first = fmt.Errorf("store: journal: sync: %w", err)
				}
			}
		}
		j.unsynced = false
	}
	if j.metaDirty {
		if err := writeMeta(j.dir, &j.meta); err != nil && first == nil {
			first = err
		}
		j.metaDirty = false
	}
	return first
}

// saveMeta writes meta.json now (monitors, streams, capacities, floors:
// rare changes a crash must not lose).
func (j *journal) saveMeta() error {
	if err := writeMeta(j.dir, &j.meta); err != nil {
		return err
	}
	j.metaDirty = false
	return nil
}

func (j *journal) Location() Location { return j.loc }

func (j *journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	var err error
	if !j.ro {
		err = j.maybeSync(true)
	}
	j.closeFiles()
	return err
}

func (j *journal) closeFiles() {
	for _, s := range []*jset{&j.raw, &j.long} {
		if s.f != nil {
			s.f.Close()
			s.f = nil
		}
	}
}

// writable is checked by every writer, under j.mu.
func (j *journal) writable() error {
	switch {
	case j.closed:
		return errors.New("store: the journal is closed")
	case j.ro:
		return errJournalReadOnly
	}
	return nil
}

// scanSegment calls fn for each record of the first size bytes of the
// segment at path; one removed meanwhile (retention) has no records.
func scanSegment(path string, size int64, fn func(typ byte, payload []byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: journal: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(len(segMagic)), io.SeekStart); err != nil {
		return fmt.Errorf("store: journal: %w", err)
	}
	fr := frameReader{r: bufio.NewReaderSize(io.LimitReader(f, size-int64(len(segMagic))), 32<<10)}
	for {
		typ, payload, err := fr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: journal %s: %w", path, err)
		}
		if err := fn(typ, payload); err != nil {
			return err
		}
	}
}

// satAdd is a+b, saturating at the int64 bounds' top.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

var _ Store = (*journal)(nil)
