package store

import (
	"encoding/json"
	"fmt"

	"github.com/sonde-project/sonde/internal/model"
)

// rollupData is what of a model.MonitorRollup lives in Rollup.Data.
type rollupData struct {
	Bins         []model.RollupBin  `json:"bins"`
	FwdBins      []model.RollupBin  `json:"fwd_bins,omitempty"`
	RevBins      []model.RollupBin  `json:"rev_bins,omitempty"`
	ThresholdsNs []int64            `json:"thresholds_ns"`
	Within       []uint32           `json:"within"`
	ByLoad       []model.RollupLoad `json:"by_load,omitempty"`
}

// RollupFrom is the stored form of an analysis rollup: its sums in
// columns, its bins and threshold counts JSON in Data.
func RollupFrom(m model.MonitorRollup) (Rollup, error) {
	data, err := json.Marshal(rollupData{m.Bins, m.FwdBins, m.RevBins, m.ThresholdsNs, m.Within, m.ByLoad})
	if err != nil {
		return Rollup{}, fmt.Errorf("store: encode rollup: %w", err)
	}
	if len(data) > MaxRollupData {
		return Rollup{}, fmt.Errorf("%w: rollup data of %d bytes, the limit is %d", ErrBadInput, len(data), MaxRollupData)
	}
	return Rollup{Stream: m.Stream, MinuteNs: m.MinuteNs, Sent: m.Sent, Lost: m.Lost, Late: m.Late,
		SumNs: m.SumNs, SumSqNs: m.SumSqNs, MinNs: m.MinNs, MaxNs: m.MaxNs, Data: data}, nil
}

// Model is the analysis rollup r stores (RollupFrom's inverse).
func (r Rollup) Model() (model.MonitorRollup, error) {
	var d rollupData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return model.MonitorRollup{}, fmt.Errorf("store: rollup of minute %d: %w", r.MinuteNs, err)
	}
	return model.MonitorRollup{Stream: r.Stream, MinuteNs: r.MinuteNs, Sent: r.Sent, Lost: r.Lost, Late: r.Late,
		SumNs: r.SumNs, SumSqNs: r.SumSqNs, MinNs: r.MinNs, MaxNs: r.MaxNs,
		Bins: d.Bins, FwdBins: d.FwdBins, RevBins: d.RevBins, ThresholdsNs: d.ThresholdsNs, Within: d.Within, ByLoad: d.ByLoad}, nil
}
