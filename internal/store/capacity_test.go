package store

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
)

// testCapacities: the history reads back as the rows in effect over a
// range (the one before it included), per monitor; a row at the same
// instant replaces the first; bad rows are refused and change nothing.
func testCapacities(t *testing.T, url string) {
	ctx := context.Background()
	s := open(t, url, Options{})
	a, _ := monitor(t, s, "a")
	b, _ := monitor(t, s, "b")
	const m = int64(60e9)
	rows := []CapacityRow{
		{FromNs: t0, UpBps: 700e3, DownBps: 8e6, UpSource: CapacityConfigured, DownSource: CapacityConfigured},
		{FromNs: t0 + 10*m, UpBps: 650e3, UpSource: CapacityLearnt},
		{FromNs: t0 + 20*m, UpBps: 1e6, DownBps: 20e6, UpSource: CapacityConfigured, DownSource: CapacityConfigured},
	}
	for _, r := range rows {
		if err := s.SetCapacity(ctx, a, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetCapacity(ctx, b, CapacityRow{FromNs: t0 + 5*m, UpBps: 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		from, to int64
		want     []CapacityRow
	}{
		{t0 - m, t0, []CapacityRow{}},
		{t0 - m, t0 + 1, rows[:1]},
		{t0 + 5*m, t0 + 6*m, rows[:1]},
		{t0 + 5*m, t0 + 10*m + 1, rows[:2]},
		{t0 + 10*m, t0 + 30*m, rows[1:]},
		{t0 + 30*m, t0 + 40*m, rows[2:]},
		{t0 - m, t0 + 40*m, rows},
	} {
		got, err := s.Capacities(ctx, a, c.from, c.to)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Capacities(%d, %d min) = %+v, %v; want %+v", (c.from-t0)/m, (c.to-t0)/m, got, err, c.want)
		}
	}
	// Same instant: replaced.
	re := CapacityRow{FromNs: t0 + 20*m, UpBps: 2e6, DownBps: 30e6, UpSource: CapacityLearnt, DownSource: CapacityLearnt}
	if err := s.SetCapacity(ctx, a, re); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Capacities(ctx, a, t0+25*m, t0+26*m); err != nil || !reflect.DeepEqual(got, []CapacityRow{re}) {
		t.Errorf("after replacing: %+v, %v", got, err)
	}
	if got, err := s.Capacities(ctx, b, t0, t0+40*m); err != nil || len(got) != 1 || got[0].UpBps != 1 {
		t.Errorf("monitor b: %+v, %v", got, err)
	}
	for _, bad := range []CapacityRow{{UpBps: -1}, {DownBps: math.NaN()}, {UpBps: math.Inf(1)}, {DownBps: 2e13}, {UpSource: "guessed"}} {
		bad.FromNs = t0 + 30*m
		if err := s.SetCapacity(ctx, a, bad); !errors.Is(err, ErrBadInput) {
			t.Errorf("SetCapacity(%+v) = %v, want ErrBadInput", bad, err)
		}
	}
	if got, _ := s.Capacities(ctx, a, t0, t0+40*m); len(got) != 3 {
		t.Errorf("bad rows changed the history: %+v", got)
	}
}
