package fleet

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
	"github.com/sonde-project/sonde/internal/store"
)

// unit is what the report adds up, a minute rollup or a merged hour:
// counts, RTT moments, and the store's RollupData: the thresholds counted
// exactly with the probes within each, the RTT histogram's bins (sparse,
// ascending) and the per-load-state counts. The one-way bins are left
// empty: the report reads RTTs only.
type unit struct {
	startNs          int64
	sent, lost, late uint64
	sumNs, sumSqNs   float64
	minNs, maxNs     int64
	store.RollupData
}

func (u *unit) answered() uint64 { return u.sent - u.lost }

// fromRollup decodes a stored minute rollup (in any of the store's
// encodings, without the detour through model.MonitorRollup).
func fromRollup(r store.Rollup) (unit, error) {
	u := unit{startNs: r.MinuteNs, sent: uint64(r.Sent), lost: uint64(r.Lost), late: uint64(r.Late),
		sumNs: r.SumNs, sumSqNs: r.SumSqNs, minNs: r.MinNs, maxNs: r.MaxNs}
	if err := u.UnmarshalBinary(r.Data); err != nil {
		return unit{}, fmt.Errorf("fleet: rollup of stream %d, minute %d: %w", r.Stream, r.MinuteNs, err)
	}
	u.FwdBins, u.RevBins = nil, nil
	if u.lost > u.sent || u.late > u.lost || len(u.Within) != len(u.ThresholdsNs) {
		return unit{}, fmt.Errorf("fleet: rollup of stream %d, minute %d: inconsistent counts", r.Stream, r.MinuteNs)
	}
	for _, bl := range u.ByLoad {
		if len(bl.Within) != len(u.ThresholdsNs) {
			return unit{}, fmt.Errorf("fleet: rollup of stream %d, minute %d: inconsistent load-state counts", r.Stream, r.MinuteNs)
		}
	}
	for i, b := range u.Bins {
		if int(b.Bin) >= reliability.NumBins || (i > 0 && b.Bin <= u.Bins[i-1].Bin) {
			return unit{}, fmt.Errorf("fleet: rollup of stream %d, minute %d: bins out of order or range", r.Stream, r.MinuteNs)
		}
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
	u.Bins = mergeBins(u.Bins, v.Bins)
	if !slices.Equal(u.ThresholdsNs, v.ThresholdsNs) {
		var th []int64
		var w []uint64
		for i, l := range u.ThresholdsNs {
			if j := slices.Index(v.ThresholdsNs, l); j >= 0 {
				th = append(th, l)
				w = append(w, u.Within[i]+v.Within[j])
			}
		}
		u.ThresholdsNs, u.Within = th, w
		u.ByLoad = nil // per-load counts of differing thresholds do not add
		return
	}
	for i := range u.Within {
		u.Within[i] += v.Within[i]
	}
	for _, vl := range v.ByLoad {
		k := slices.IndexFunc(u.ByLoad, func(l store.LoadCounts) bool { return l.Load == vl.Load })
		if k < 0 {
			vl.Within = slices.Clone(vl.Within)
			u.ByLoad = append(u.ByLoad, vl)
			continue
		}
		u.ByLoad[k].Sent += vl.Sent
		u.ByLoad[k].Lost += vl.Lost
		for i := range vl.Within {
			u.ByLoad[k].Within[i] += vl.Within[i]
		}
	}
}

func (u unit) clone() unit {
	c := u
	c.ThresholdsNs = slices.Clone(u.ThresholdsNs)
	c.Within = slices.Clone(u.Within)
	c.Bins = slices.Clone(u.Bins)
	c.FwdBins, c.RevBins = nil, nil
	c.ByLoad = nil
	for _, l := range u.ByLoad {
		l.Within = slices.Clone(l.Within)
		c.ByLoad = append(c.ByLoad, l)
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
	data, err := h.AppendBinary(nil)
	if err != nil {
		return store.HourRow{}, fmt.Errorf("fleet: hour %d of stream %d: %w", hourNs, mins[0].Stream, err)
	}
	return store.HourRow{Stream: mins[0].Stream, HourNs: hourNs, Minutes: len(mins), Sent: h.sent, Lost: h.lost, Late: h.late,
		SumNs: h.sumNs, SumSqNs: h.sumSqNs, MinNs: h.minNs, MaxNs: h.maxNs, Data: data}, nil
}

// fromHour decodes a stored hour; see decodeHour.
func fromHour(h store.HourRow) (unit, error) {
	var u unit
	err := decodeHour(h, &u)
	return u, err
}

// decodeHour is fromHour into u, reusing u's slices: a month's report
// decodes millions of hours. The store's codec bounds every count before
// it allocates; this checks what only the analysis knows: the bins are
// reliability's, the counts agree with the hour's columns.
func decodeHour(h store.HourRow, u *unit) error {
	bad := func(what string) error {
		return fmt.Errorf("fleet: hour %d of stream %d: %s", h.HourNs, h.Stream, what)
	}
	if err := u.UnmarshalBinary(h.Data); err != nil {
		return fmt.Errorf("fleet: hour %d of stream %d: %w", h.HourNs, h.Stream, err)
	}
	u.startNs, u.sent, u.lost, u.late, u.sumNs, u.sumSqNs, u.minNs, u.maxNs = h.HourNs, h.Sent, h.Lost, h.Late, h.SumNs, h.SumSqNs, h.MinNs, h.MaxNs
	if u.lost > u.sent || u.late > u.lost {
		return bad("inconsistent counts")
	}
	for i, l := range u.ThresholdsNs {
		if l <= 0 || l > 1<<62 || u.Within[i] > u.answered() {
			return bad("bad threshold")
		}
	}
	var total uint64
	for _, b := range u.Bins {
		if int(b.Bin) >= reliability.NumBins {
			return bad("bad bin")
		}
		total += uint64(b.N)
	}
	if total != u.answered() {
		return bad(fmt.Sprintf("histogram holds %d values for %d answered probes", total, u.answered()))
	}
	for _, l := range u.ByLoad {
		if int(l.Load) >= len(model.LoadStates) || l.Lost > l.Sent || l.Sent > u.sent {
			return bad("bad load state")
		}
	}
	return nil
}

// withinAt is how many probes of u were within l: exact when u counted
// l, else a lower bound from the bins wholly at or below it (approx).
func (u *unit) withinAt(l int64) (n uint64, approx bool) {
	if i := slices.Index(u.ThresholdsNs, l); i >= 0 {
		return u.Within[i], false
	}
	if u.answered() == 0 || l >= u.maxNs {
		return u.answered(), false
	}
	for _, b := range u.Bins {
		if reliability.BinUpperNs(int(b.Bin)) > l+1 {
			break
		}
		n += uint64(b.N)
	}
	return n, true
}
