package store

import (
	"fmt"
	"math"

	"github.com/sonde-project/sonde/internal/model"
)

// RollupFrom is the stored form of an analysis rollup: its sums in
// columns, its bins and threshold counts in Data (RollupData's encoding).
func RollupFrom(m model.MonitorRollup) (Rollup, error) {
	d := RollupData{Bins: m.Bins, FwdBins: m.FwdBins, RevBins: m.RevBins, ThresholdsNs: m.ThresholdsNs, Within: widen(m.Within)}
	if len(m.ByLoad) > 0 {
		d.ByLoad = make([]LoadCounts, len(m.ByLoad))
		for i, l := range m.ByLoad {
			d.ByLoad[i] = LoadCounts{Load: l.Load, Sent: uint64(l.Sent), Lost: uint64(l.Lost), Within: widen(l.Within)}
		}
	}
	data, err := d.AppendBinary(make([]byte, 0, 64+2*len(m.Bins)+2*len(m.FwdBins)+2*len(m.RevBins)))
	if err != nil {
		return Rollup{}, fmt.Errorf("store: encode rollup of minute %d: %w", m.MinuteNs, err)
	}
	if len(data) > MaxRollupData {
		return Rollup{}, fmt.Errorf("%w: rollup data of %d bytes, the limit is %d", ErrBadInput, len(data), MaxRollupData)
	}
	return Rollup{Stream: m.Stream, MinuteNs: m.MinuteNs, Sent: m.Sent, Lost: m.Lost, Late: m.Late,
		SumNs: m.SumNs, SumSqNs: m.SumSqNs, MinNs: m.MinNs, MaxNs: m.MaxNs, Data: data}, nil
}

// Model is the analysis rollup r stores (RollupFrom's inverse). It reads
// Data in any of RollupData's encodings, the JSON of older stores too.
func (r Rollup) Model() (model.MonitorRollup, error) {
	var d RollupData
	if err := d.UnmarshalBinary(r.Data); err != nil {
		return model.MonitorRollup{}, fmt.Errorf("store: rollup of minute %d: %w", r.MinuteNs, err)
	}
	m := model.MonitorRollup{Stream: r.Stream, MinuteNs: r.MinuteNs, Sent: r.Sent, Lost: r.Lost, Late: r.Late,
		SumNs: r.SumNs, SumSqNs: r.SumSqNs, MinNs: r.MinNs, MaxNs: r.MaxNs,
		Bins: d.Bins, FwdBins: d.FwdBins, RevBins: d.RevBins, ThresholdsNs: d.ThresholdsNs}
	ok := true
	m.Within, ok = narrow(d.Within, ok)
	for _, l := range d.ByLoad {
		var w []uint32
		w, ok = narrow(l.Within, ok)
		ok = ok && l.Sent <= math.MaxUint32 && l.Lost <= math.MaxUint32
		m.ByLoad = append(m.ByLoad, model.RollupLoad{Load: l.Load, Sent: uint32(l.Sent), Lost: uint32(l.Lost), Within: w})
	}
	if !ok {
		return model.MonitorRollup{}, fmt.Errorf("store: rollup of minute %d: %w: a count over a minute's range", r.MinuteNs, errRollupData)
	}
	return m, nil
}

// narrow is w as a minute's uint32 counts; ok turns false if one is over.
func narrow(w []uint64, ok bool) ([]uint32, bool) {
	if w == nil {
		return nil, ok
	}
	out := make([]uint32, len(w))
	for i, v := range w {
		ok = ok && v <= math.MaxUint32
		out[i] = uint32(v)
	}
	return out, ok
}
