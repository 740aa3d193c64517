package passive

import (
	"sync"

	"github.com/sonde-project/sonde/internal/model"
)

// Live analyses a live capture whose packets the kernel already split
// by flow (sonde capture: one PACKET_FANOUT socket per worker, both
// directions of a connection to the same socket). Each worker is an
// Analyzer of its own, fed by one goroutine with Packet, with its own
// capture clock; Finish merges them as the shards of a file analysis
// are merged (shard.go): records in one order, counters summed. The
// workers finish their records into the merging Analyzer's spill
// (Config.Spill), as file shards do: memory follows the live flows.
type Live struct {
	start   int64
	main    *Analyzer // merges the workers; holds the spill
	workers []*Analyzer
}

func (l *Live) analyzer(cfg Config) *Analyzer {
	a := New(cfg)
	a.first, a.last, a.started = l.start, l.start, true
	return a
}

// NewLive returns the analysis of a live capture by n workers that
// started at start (Unix ns): the origin of the records' times, common to
// the workers, whose first packets come in any order. With per-sample
// outputs (Config.KeepSamples, Identity) there is one worker, as for
// files: Worker(i) is then the same Analyzer for every i.
func NewLive(cfg Config, n int, start int64) *Live {
	cfg.Workers = 0
	if n < 1 || cfg.KeepSamples || cfg.Identity {
		n = 1
	}
	l := &Live{start: start}
	l.main = l.analyzer(cfg)
	if n == 1 {
		l.workers = []*Analyzer{l.main}
		return l
	}
	wc := serialised(cfg)
	wc.Spill = false // the merging Analyzer's, shared (it locks)
	// The flow bound is the capture's, split as for files.
	wc.MaxFlows = max(l.main.cfg.MaxFlows/n, 1)
	for range n {
		w := l.analyzer(wc)
		w.spill = l.main.spill
		l.workers = append(l.workers, w)
	}
	return l
}

// serialised returns cfg with its callbacks (OnRecord, OnSample) called
// one at a time: workers finish flows and take samples concurrently.
func serialised(cfg Config) Config {
	mu := new(sync.Mutex)
	if on := cfg.OnRecord; on != nil {
		cfg.OnRecord = func(r Record) {
			mu.Lock()
			defer mu.Unlock()
			on(r)
		}
	}
	if on := cfg.OnSample; on != nil {
		cfg.OnSample = func(s model.PassiveRTT) {
			mu.Lock()
			defer mu.Unlock()
			on(s)
		}
	}
	return cfg
}

// Workers is the number of workers.
func (l *Live) Workers() int { return len(l.workers) }

// Worker returns the analyser of worker i (mod the number of workers),
// to be fed by one goroutine.
func (l *Live) Worker(i int) *Analyzer { return l.workers[i%len(l.workers)] }

// Finish ends the analysis once every worker's goroutine has stopped and
// returns it with the Analyzer that holds it (for Records, Samples and
// Close).
func (l *Live) Finish(truth *TruthIndex) (*Analyzer, *model.Analysis) {
	a := l.main
	if len(l.workers) > 1 {
		for _, w := range l.workers {
			// Each worker's flows finish at the end, with the others', in
			// one order (mergeShards).
			a.shards = append(a.shards, &shard{a: w})
			a.last = max(a.last, w.last)
		}
	}
	return a, a.Finish(truth)
}
