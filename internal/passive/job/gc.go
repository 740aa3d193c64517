package job

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// TuneGC sets the collector's target for an analysis (unless GOGC or
// GOMEMLIMIT is set): the heap may grow to max(heapFloor, 1.25 × the live
// heap) before a collection. The heap is long-lived per-flow state: the
// default (twice the live data) doubled the peak RSS, and a target
// proportional to it (GOGC 50) still let RSS follow the live flows'
// growth through a capture's first minutes and the heap's fragmentation
// (74, 92 and 107 MB on the bench's 1 M, 10 M and 50 M packets). A target
// with a floor is expressed as a memory limit, which the scavenger also
// holds RSS to; each collection (gcTuner) sets the next limit from the
// live heap it found, so a capture with many live flows still gets room
// to grow. Above the floor the room is a quarter of the live heap (GOGC 25:
// about twice GOGC 50's collections, a few % of the CPU time): with half,
// the 50 M capture's live heap (43 MB against 38 MB on 10 M) lifted its
// RSS 4-8 MB above the 10 M one's. It changes the process's collector:
// commands call it once, before the analysis.
func TuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	t := &gcTuner{floor: heapFloor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	t.arm()
}

// heapFloor is the heap an analysis may use before the collector runs
// (the 10 M-packet bench capture's live heap peaks at ~40 MB).
const heapFloor = 64 << 20

// gcTuner sets the memory limit after every collection: a finalizer on
// an object that every collection finds unreachable, re-armed each time.
type gcTuner struct {
	floor  int64
	sample []metrics.Sample
}

type gcSentinel struct{ _ [16]byte }

func (t *gcTuner) arm() {
	runtime.SetFinalizer(&gcSentinel{}, func(*gcSentinel) {
		t.tune()
		t.arm()
	})
}

func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	live := int64(0)
	if v := t.sample[0].Value; v.Kind() == metrics.KindUint64 {
		live = int64(v.Uint64())
	}
	debug.SetMemoryLimit(max(t.floor, live+live/4))
}
