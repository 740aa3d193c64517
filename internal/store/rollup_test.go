package store

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sonde-project/sonde/internal/model"
)

// TestRollupRoundTrip: an analysis rollup stored and read back is the
// same, bins, thresholds and per-load counts included.
func TestRollupRoundTrip(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "r.db"), Options{})
	mid, sids := monitor(t, s, "m")
	m := model.MonitorRollup{Stream: 1, MinuteNs: t0, Sent: 600, Lost: 4, Late: 1, SumNs: 1.1e10, SumSqNs: 2.2e17, MinNs: 18e6, MaxNs: 430e6,
		Bins: []model.RollupBin{{Bin: 800, N: 590}, {Bin: 1100, N: 6}}, FwdBins: []model.RollupBin{{Bin: 700, N: 596}}, RevBins: []model.RollupBin{{Bin: 701, N: 596}},
		ThresholdsNs: []int64{20e6, 200e6}, Within: []uint32{500, 590},
		ByLoad: []model.RollupLoad{{Load: model.LoadIdle, Sent: 500, Lost: 0, Within: []uint32{500, 500}}, {Load: model.LoadUp, Sent: 100, Lost: 4, Within: []uint32{0, 90}}}}
	r, err := RollupFrom(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), mid, &Batch{Rollups: []Rollup{r}}); err != nil {
		t.Fatal(err)
	}
	var got []model.MonitorRollup
	err = s.Rollups(context.Background(), mid, t0, t0+60e9, func(r Rollup) error {
		m, err := r.Model()
		got = append(got, m)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Stream = sids[1]
	if len(got) != 1 || !reflect.DeepEqual(got[0], m) {
		t.Fatalf("read back %+v, want %+v", got, m)
	}
	if _, err := (Rollup{Data: []byte("{")}).Model(); err == nil {
		t.Error("a damaged rollup decoded")
	}
	// 40,000 bins of 5-byte counts are 200 KB of data, over MaxRollupData.
	big := model.MonitorRollup{Bins: make([]model.RollupBin, 40_000)}
	for i := range big.Bins {
		big.Bins[i] = model.RollupBin{Bin: uint16(i), N: 1 << 31}
	}
	if _, err := RollupFrom(big); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "the limit is") {
		t.Errorf("oversized rollup: %v", err)
	}
}
