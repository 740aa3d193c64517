package passive

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sonde-project/sonde/internal/emulator"
	"github.com/sonde-project/sonde/internal/metrics"
	"github.com/sonde-project/sonde/internal/model"
)

// maxTruthLinks bounds the links a truth entry records (lab.MaxLinks).
const maxTruthLinks = 16

type truthEntry struct {
	dir     uint8
	mask    uint16 // links with a delivered record
	dropped uint16 // links that dropped the packet
	delay   [maxTruthLinks]int64
	dup     bool // the identity hash is not unique: unusable
}

// TruthIndex is the emulator's per-packet ground truth (a truth file) indexed by packet
// identity, with the observer's position on the path.
type TruthIndex struct {
	File  string
	links int
	// Links on each side of the observer: server side (packets travelling
	// up reach the server through them) and client side.
	serverSide, clientSide uint16
	observer               string
	packets                map[uint64]*truthEntry
}

// MaxObserverLink bounds an observer's link number (a lab has a few
// links).
const MaxObserverLink = 1 << 10

// ParseObserver reads where a capture was taken (analyze --observer): a
// link number from 1 and an end, A (client side) or B (server side),
// e.g. 1A.
func ParseObserver(s string) (link int, end byte, err error) {
	obs := strings.ToUpper(s)
	if len(obs) < 2 {
		return 0, 0, fmt.Errorf("--observer %q: want LINK and END, e.g. 1A", s)
	}
	link, err = strconv.Atoi(obs[:len(obs)-1])
	if end := obs[len(obs)-1]; err != nil || link < 1 || link > MaxObserverLink || (end != 'A' && end != 'B') {
		return 0, 0, fmt.Errorf("--observer %q: want a link number from 1 to %d and an end A or B, e.g. 1A", s, MaxObserverLink)
	}
	return link, obs[len(obs)-1], nil
}

// LoadTruth reads a ground-truth file. The observer is at end ('A' or 'B')
// of link (1-based): a lab capture's interface 0 is end A, 1 is end B.
func LoadTruth(path string, link int, end byte) (*TruthIndex, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTruth(f, path, link, end)
}

// ReadTruth is LoadTruth from a reader.
func ReadTruth(r io.Reader, name string, link int, end byte) (*TruthIndex, error) {
	tr, err := emulator.NewTruthReader(r)
	if err != nil {
		return nil, err
	}
	n := len(tr.Header.Links)
	if n == 0 || n > maxTruthLinks {
		return nil, fmt.Errorf("truth file %s: %d links", name, n)
	}
	if link < 1 || link > n || (end != 'A' && end != 'B') {
		return nil, fmt.Errorf("observer link %d end %c: the truth file has links 1 to %d, ends A and B", link, end, n)
	}
	t := &TruthIndex{File: name, links: n, packets: make(map[uint64]*truthEntry),
		observer: fmt.Sprintf("link %d (%s) end %c", link, tr.Header.Links[link-1].Name, end)}
	// Link indexes are 0-based in records. Observer at end A of link k sees
	// packets before they cross link k: link k is on the server side.
	first := link - 1
	if end == 'B' {
		first = link
	}
	for i := range n {
		if i >= first {
			t.serverSide |= 1 << i
		} else {
			t.clientSide |= 1 << i
		}
	}
	for {
		rec, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				break // a crashed writer's last record
			}
			return nil, fmt.Errorf("truth file %s: %w", name, err)
		}
		if int(rec.Link) >= n {
			continue
		}
		e := t.packets[rec.Hash]
		if e == nil {
			e = &truthEntry{dir: rec.Dir}
			t.packets[rec.Hash] = e
		}
		bit := uint16(1) << rec.Link
		if rec.Fate != emulator.Delivered {
			e.dropped |= bit
			continue
		}
		if e.mask&bit != 0 || e.dir != rec.Dir {
			e.dup = true
			continue
		}
		e.mask |= bit
		e.delay[rec.Link] = int64(rec.Delay())
	}
	return t, nil
}

// match is how a sample stands against the truth. The order matters: a
// sample of two components stands as the greater of theirs.
type match uint8

const (
	matched   match = iota
	unmatched       // a packet the truth does not hold (or not uniquely)
	dropped         // a packet a link on the measured side dropped: no true RTT
)

// component is the true delay between the observer and the endpoint the
// start packet heads to, and back: the start and end packets' delays over
// the links on that side. A side with no links (observer at the endpoint)
// is 0.
func (t *TruthIndex) component(start, end uint64) (int64, match) {
	s, e := t.packets[start], t.packets[end]
	if s == nil || e == nil || s.dup || e.dup || s.dir == e.dir {
		return 0, unmatched
	}
	side := t.serverSide
	if s.dir == emulator.Down {
		side = t.clientSide
	}
	if s.dropped&side != 0 || e.dropped&side != 0 {
		return 0, dropped
	}
	if s.mask&side != side || e.mask&side != side {
		return 0, unmatched
	}
	var d int64
	for i := range t.links {
		if side&(1<<i) != 0 {
			d += s.delay[i] + e.delay[i]
		}
	}
	return d, matched
}

// trueRTT is the ground truth of one sample.
func (t *TruthIndex) trueRTT(s *sample) (int64, match) {
	switch {
	case s.pairs:
		a, m1 := t.component(s.ids[0], s.ends[0])
		b, m2 := t.component(s.ids[1], s.ends[1])
		return a + b, max(m1, m2)
	case s.n == 2:
		if isFull(s.method) {
			return 0, unmatched // a spin full sample without the reflected edge
		}
		return t.component(s.ids[0], s.ids[1])
	case s.n == 3:
		a, m1 := t.component(s.ids[0], s.ids[1])
		b, m2 := t.component(s.ids[1], s.ids[2])
		return a + b, max(m1, m2)
	}
	return 0, unmatched
}

func isFull(m Method) bool { return m == TSFull || m == SpinFullUp || m == SpinFullDown }

// compare computes every method's error over its valid samples.
func (t *TruthIndex) compare(a *Analyzer) *model.TruthCompare {
	var errs [numMethods][]float64
	var trueSum [numMethods]float64
	var count, drops [numMethods]int
	for i := range a.samples {
		s := &a.samples[i]
		if s.flag != "" {
			continue
		}
		count[s.method]++
		tr, m := t.trueRTT(s)
		if m == dropped {
			drops[s.method]++
		}
		if m != matched || tr <= 0 {
			continue
		}
		errs[s.method] = append(errs[s.method], float64(s.rtt-tr)/float64(tr))
		trueSum[s.method] += float64(tr) / 1e6
	}
	dur := float64(a.last-a.first) / 1e9
	tc := &model.TruthCompare{File: t.File, Observer: t.observer}
	for m := range numMethods {
		if count[m] == 0 {
			continue
		}
		me := ErrorStats(errs[m])
		me.Method, me.Samples, me.Dropped = m.String(), count[m], drops[m]
		if dur > 0 {
			me.SamplesPerS = float64(count[m]) / dur
		}
		if me.Matched > 0 {
			me.MeanTrueMs = trueSum[m] / float64(me.Matched)
		}
		tc.Methods = append(tc.Methods, me)
	}
	return tc
}

// ErrorStats summarises relative errors e = (est − true)/true: statistics
// of |e| in percent, and the mean signed error.
func ErrorStats(e []float64) model.MethodError {
	me := model.MethodError{Matched: len(e)}
	if len(e) == 0 {
		return me
	}
	abs := make([]float64, len(e))
	var sum, signed float64
	for i, v := range e {
		abs[i] = math.Abs(v) * 100
		sum += abs[i]
		signed += v * 100
	}
	n := float64(len(e))
	me.MeanAbsPct = sum / n
	me.MeanSignedPct = signed / n
	var sq float64
	for _, v := range abs {
		sq += (v - me.MeanAbsPct) * (v - me.MeanAbsPct)
	}
	if len(e) > 1 {
		me.StddevPct = math.Sqrt(sq / (n - 1))
	}
	slices.Sort(abs)
	me.MedianPct = metrics.Percentile(abs, 50)
	me.P90Pct = metrics.Percentile(abs, 90)
	me.P99Pct = metrics.Percentile(abs, 99)
	me.MaxPct = abs[len(abs)-1]
	return me
}
