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
// are merged (shard.go): records in one order, counters summed.
type Live struct {
	cfg     Config
	start   int64
	workers []*Analyzer
}

func (l *Live) worker(cfg Config) *Analyzer {
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
	l := &Live{cfg: cfg, start: start}
	if n == 1 {
		l.workers = []*Analyzer{l.worker(cfg)}
		return l
	}
	wc := cfg
	if on := cfg.OnRecord; on != nil {
		// Workers finish flows concurrently: one record at a time.
		var mu sync.Mutex
		wc.OnRecord = func(r Record) {
			mu.Lock()
			defer mu.Unlock()
			on(r)
		}
	}
	for range n {
		w := l.worker(wc)
		// The flow bound is the capture's, split as for files.
		w.cfg.MaxFlows = max(w.cfg.MaxFlows/n, 1)
		l.workers = append(l.workers, w)
	}
	return l
}

// Workers is the number of workers.
func (l *Live) Workers() int { return len(l.workers) }

// Worker returns the analyser of worker i (mod the number of workers),
// to be fed by one goroutine.
func (l *Live) Worker(i int) *Analyzer { return l.workers[i%len(l.workers)] }

// Finish ends the analysis once every worker's goroutine has stopped and
// returns it with the Analyzer that holds it (for Records and Samples).
func (l *Live) Finish(truth *TruthIndex) (*Analyzer, *model.Analysis) {
	if len(l.workers) == 1 {
		w := l.workers[0]
		return w, w.Finish(truth)
	}
	a := l.worker(l.cfg)
	for _, w := range l.workers {
		// Each worker's flows finish at the end, with the others', in
		// one order (mergeShards).
		a.shards = append(a.shards, &shard{a: w})
		a.last = max(a.last, w.last)
	}
	return a, a.Finish(truth)
}
