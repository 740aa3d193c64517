package monitor

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/sonde-project/sonde/internal/model"
	"github.com/sonde-project/sonde/internal/reliability"
)

// TestDetectorsSameOnWindowSamples: the detectors find the same events in
// the daemon's 24-byte window samples, without exact percentiles, as in
// the full samples with them: outages, a baseline step and loaded
// episodes over 15 minutes of two streams with one-way delays.
func TestDetectorsSameOnWindowSamples(t *testing.T) {
	cfg := Config{Targets: []string{"stamp://127.0.0.1:9", "stamp://127.0.0.2:9"}, Rate: 10, Store: ":memory:", Name: "w"}
	cfg.Defaults()
	plan, err := cfg.Validate()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	var full []model.ProbeSample
	per := int64(100 * time.Millisecond)
	for i := range int64(15 * 60 * 10) {
		sent := t0 + i*per
		el := time.Duration(i * per)
		for s := range int32(2) {
			base := int64(20e6)
			if el > 8*time.Minute {
				base = 35e6 // a baseline step
			}
			p := model.ProbeSample{Stream: s, Seq: uint32(i), SentNs: sent, LatenessNs: int64(rng.IntN(1e5)), Load: model.LoadIdle}
			switch {
			case el%(5*time.Minute) >= 2*time.Minute && el%(5*time.Minute) < 2*time.Minute+40*time.Second:
				// A loaded episode: queueing delay climbs, drops at peaks.
				p.Load = model.LoadUp
				base += int64(el%(40*time.Second)) / 100
			}
			p.RTTNs = base + rng.Int64N(2e6)
			p.FwdNs, p.RevNs = p.RTTNs/2, p.RTTNs-p.RTTNs/2
			if (el >= 3*time.Minute && el < 3*time.Minute+20*time.Second) || rng.IntN(300) == 0 {
				p.RTTNs, p.FwdNs, p.RevNs, p.Lost = -1, 0, 0, true
			}
			full = append(full, p)
		}
	}
	events := func(ss []model.ProbeSample, exact int) []model.MonitorEvent {
		rc := reliabilityConfig(plan, 1e6, 10e6)
		rc.ExactLimit = exact
		a, err := reliability.New(rc, plan.Streams)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			if err := a.AddSample(s); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := a.Report(ss[0].SentNs, ss[len(ss)-1].SentNs+1)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Events
	}
	// In the order detect feeds them: by stream, then send time.
	var byStream, win []model.ProbeSample
	for s := range int32(2) {
		for _, p := range full {
			if p.Stream == s {
				byStream = append(byStream, p)
				win = append(win, winOf(p).sample())
			}
		}
	}
	want := events(byStream, maxRecent)
	got := events(win, 1)
	kinds := map[model.EventKind]int{}
	for _, e := range want {
		kinds[e.Kind]++
	}
	if len(kinds) < 3 {
		t.Fatalf("the scenario gives events of kinds %v: want outages, a step and episodes to compare", kinds)
	}
	t.Logf("kinds %v", kinds)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events differ:\n got %d: %+v\nwant %d: %+v", len(got), got, len(want), want)
	}
}
