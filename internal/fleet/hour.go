package fleet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// unit is what the report adds up, a minute rollup or a merged hour:
// counts, RTT moments, the thresholds counted exactly with the probes
// within each, and the histogram bins (sparse, ascending).
type unit struct {
	startNs          int64
	sent, lost, late uint64
	sumNs, sumSqNs   float64
	minNs, maxNs     int64
	thresholds       []int64
	within           []uint64
	bins             []model.RollupBin
	byLoad           []loadUnit
}

type loadUnit struct {
	load       model.LoadState
	sent, lost uint64
	within     []uint64
}

func (u *unit) answered() uint64 { return u.sent - u.lost }

// fromRollup decodes a stored minute rollup.
func fromRollup(r store.Rollup) (unit, error) {
	m, err := r.Model()
	if err != nil {
		return unit{}, err
	}
	if m.Lost > m.Sent || m.Late > m.Lost || len(m.Within) != len(m.ThresholdsNs) || len(m.ThresholdsNs) > 64 {
		return unit{}, fmt.Errorf("fleet: rollup of stream %d, minute %d: inconsistent counts", r.Stream, r.MinuteNs)
	}
	u := unit{startNs: m.MinuteNs, sent: uint64(m.Sent), lost: uint64(m.Lost), late: uint64(m.Late),
		sumNs: m.SumNs, sumSqNs: m.SumSqNs, minNs: m.MinNs, maxNs: m.MaxNs,
		thresholds: m.ThresholdsNs, within: make([]uint64, len(m.Within)), bins: m.Bins}
	for i, w := range m.Within {
		u.within[i] = uint64(w)
	}
	for _, bl := range m.ByLoad {
		if len(bl.Within) != len(m.ThresholdsNs) {
			return unit{}, fmt.Errorf("fleet: rollup of stream %d, minute %d: inconsistent load-state counts", r.Stream, r.MinuteNs)
		}
		lu := loadUnit{load: bl.Load, sent: uint64(bl.Sent), lost: uint64(bl.Lost), within: make([]uint64, len(bl.Within))}
		for i, w := range bl.Within {
			lu.within[i] = uint64(w)
		}
		u.byLoad = append(u.byLoad, lu)
	}
	return u, nil
}

// merge adds v to u (same stream, u's span holding v's). Counts, sums,
// extremes and bins add exactly; a threshold is kept only if both counted
// it (a monitor whose configuration changed within the hour keeps the
// thresholds common to both).
func (u *unit) merge(v unit) {
	if v.sent == 0 {
		return
	}
	if u.sent == 0 {
		start := u.startNs
		*u = v.clone()
		u.startNs = start
		return
	}
	ua, va := u.answered(), v.answered()
	if va > 0 && (ua == 0 || v.minNs < u.minNs) {
		u.minNs = v.minNs
	}
	if va > 0 && (ua == 0 || v.maxNs > u.maxNs) {
		u.maxNs = v.maxNs
	}
	u.sent += v.sent
	u.lost += v.lost
	u.late += v.late
	u.sumNs += v.sumNs
	u.sumSqNs += v.sumSqNs
	u.bins = mergeBins(u.bins, v.bins)
	if !slices.Equal(u.thresholds, v.thresholds) {
		var th []int64
		var w []uint64
		for i, l := range u.thresholds {
			if j := slices.Index(v.thresholds, l); j >= 0 {
				th = append(th, l)
				w = append(w, u.within[i]+v.within[j])
			}
		}
		u.thresholds, u.within = th, w
		u.byLoad = nil // per-load counts of differing thresholds do not add
		return
	}
	for i := range u.within {
		u.within[i] += v.within[i]
	}
	for _, vl := range v.byLoad {
		k := slices.IndexFunc(u.byLoad, func(l loadUnit) bool { return l.load == vl.load })
		if k < 0 {
			u.byLoad = append(u.byLoad, loadUnit{load: vl.load, sent: vl.sent, lost: vl.lost, within: slices.Clone(vl.within)})
			continue
		}
		u.byLoad[k].sent += vl.sent
		u.byLoad[k].lost += vl.lost
		for i := range vl.within {
			u.byLoad[k].within[i] += vl.within[i]
		}
	}
}

func (u unit) clone() unit {
	c := u
	c.thresholds = slices.Clone(u.thresholds)
	c.within = slices.Clone(u.within)
	c.bins = slices.Clone(u.bins)
	c.byLoad = nil
	for _, l := range u.byLoad {
		l.within = slices.Clone(l.within)
		c.byLoad = append(c.byLoad, l)
	}
	return c
}

// mergeBins adds two ascending sparse histograms.
func mergeBins(a, b []model.RollupBin) []model.RollupBin {
	out := make([]model.RollupBin, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i].Bin < b[j].Bin):
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j].Bin < a[i].Bin:
			out = append(out, b[j])
			j++
		default:
			out = append(out, model.RollupBin{Bin: a[i].Bin, N: a[i].N + b[j].N})
			i, j = i+1, j+1
		}
	}
	return out
}

// MergeHour merges one stream's minute rollups of one hour into the
// hourly aggregate's row (what Aggregate stores).
func MergeHour(hourNs int64, mins []store.Rollup) (store.HourRow, error) {
	h := unit{startNs: hourNs}
	for _, r := range mins {
		if r.MinuteNs < hourNs || r.MinuteNs >= hourNs+store.HourNs {
			return store.HourRow{}, fmt.Errorf("fleet: minute %d is not in hour %d", r.MinuteNs, hourNs)
		}
		u, err := fromRollup(r)
		if err != nil {
			return store.HourRow{}, err
		}
		h.merge(u)
	}
	if len(mins) == 0 {
		return store.HourRow{}, errors.New("fleet: an hour without minutes")
	}
	return store.HourRow{Stream: mins[0].Stream, HourNs: hourNs, Minutes: len(mins), Sent: h.sent, Lost: h.lost, Late: h.late,
		SumNs: h.sumNs, SumSqNs: h.sumSqNs, MinNs: h.minNs, MaxNs: h.maxNs, Data: encodeHour(h)}, nil
}

// The hour's data: a version byte, then unsigned varints: the number of
// thresholds, each threshold and its count within; the number of
// non-empty bins, each as (bin − previous bin, count); the number of load
// states, each as (state, sent, lost, its counts within). Compact and
// cheap to decode, since a month's report decodes millions of them; the
// minute rollups keep the store's JSON.
const hourDataV1 = 1

func encodeHour(u unit) []byte {
	b := make([]byte, 0, 16+8*len(u.thresholds)+4*len(u.bins))
	b = append(b, hourDataV1)
	b = binary.AppendUvarint(b, uint64(len(u.thresholds)))
	for i, l := range u.thresholds {
		b = binary.AppendUvarint(b, uint64(l))
		b = binary.AppendUvarint(b, u.within[i])
	}
	b = binary.AppendUvarint(b, uint64(len(u.bins)))
	prev := 0
	for _, bin := range u.bins {
		b = binary.AppendUvarint(b, uint64(int(bin.Bin)-prev))
		b = binary.AppendUvarint(b, uint64(bin.N))
		prev = int(bin.Bin)
	}
	b = binary.AppendUvarint(b, uint64(len(u.byLoad)))
	for _, l := range u.byLoad {
		b = binary.AppendUvarint(b, uint64(l.load))
		b = binary.AppendUvarint(b, l.sent)
		b = binary.AppendUvarint(b, l.lost)
		for _, w := range l.within {
			b = binary.AppendUvarint(b, w)
		}
	}
	return b
}

// fromHour decodes a stored hour, bounding every count by what it can
// hold: a corrupt row is an error, never a large allocation.
func fromHour(h store.HourRow) (unit, error) {
	var u unit
	err := decodeHour(h, &u)
	return u, err
}

// decodeHour is fromHour into u, reusing u's slices: a month's report
// decodes millions of hours.
func decodeHour(h store.HourRow, u *unit) error {
	*u = unit{startNs: h.HourNs, sent: h.Sent, lost: h.Lost, late: h.Late, sumNs: h.SumNs, sumSqNs: h.SumSqNs, minNs: h.MinNs, maxNs: h.MaxNs,
		thresholds: u.thresholds[:0], within: u.within[:0], bins: u.bins[:0], byLoad: u.byLoad[:0]}
	bad := func(what string) error {
		return fmt.Errorf("fleet: hour %d of stream %d: %s", h.HourNs, h.Stream, what)
	}
	if u.lost > u.sent || u.late > u.lost {
		return bad("inconsistent counts")
	}
	d := h.Data
	if len(d) == 0 || d[0] != hourDataV1 {
		return bad("unknown data encoding")
	}
	d = d[1:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(d)
		if n <= 0 {
			return 0, false
		}
		d = d[n:]
		return v, true
	}
	nth, ok := next()
	if !ok || nth > 64 {
		return bad("bad threshold count")
	}
	for range nth {
		l, ok1 := next()
		w, ok2 := next()
		if !ok1 || !ok2 || l == 0 || l > 1<<62 || w > u.answered() {
			return bad("bad threshold")
		}
		u.thresholds, u.within = append(u.thresholds, int64(l)), append(u.within, w)
	}
	nb, ok := next()
	if !ok || nb > reliability.NumBins {
		return bad("bad bin count")
	}
	bin := uint64(0)
	var total uint64
	for range nb {
		db, ok1 := next()
		n, ok2 := next()
		bin += db
		if !ok1 || !ok2 || bin >= reliability.NumBins || n > 1<<32-1 {
			return bad("bad bin")
		}
		total += n
		u.bins = append(u.bins, model.RollupBin{Bin: uint16(bin), N: uint32(n)})
	}
	if total != u.answered() {
		return bad(fmt.Sprintf("histogram holds %d values for %d answered probes", total, u.answered()))
	}
	nl, ok := next()
	if !ok || nl > 5 {
		return bad("bad load-state count")
	}
	for range nl {
		st, ok1 := next()
		s, ok2 := next()
		lo, ok3 := next()
		if !ok1 || !ok2 || !ok3 || st > 4 || lo > s || s > u.sent {
			return bad("bad load state")
		}
		l := loadUnit{load: model.LoadState(st), sent: s, lost: lo, within: make([]uint64, nth)}
		for i := range l.within {
			if l.within[i], ok = next(); !ok {
				return bad("bad load state")
			}
		}
		u.byLoad = append(u.byLoad, l)
	}
	if len(d) != 0 {
		return bad("trailing data")
	}
	return nil
}

// withinAt is how many probes of u were within l: exact when u counted
// l, else a lower bound from the bins wholly at or below it (approx).
func (u *unit) withinAt(l int64) (n uint64, approx bool) {
	if i := slices.Index(u.thresholds, l); i >= 0 {
		return u.within[i], false
	}
	if u.answered() == 0 || l >= u.maxNs {
		return u.answered(), false
	}
	for _, b := range u.bins {
		if reliability.BinUpperNs(int(b.Bin)) > l+1 {
			break
		}
		n += uint64(b.N)
	}
	return n, true
}
