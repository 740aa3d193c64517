package metrictext

import (
	"runtime"
)

// GoCollector writes the Go runtime's usual series (the names
// client_golang's Go collector gives them): goroutines, threads, the
// memory statistics, the GC count and the Go version. Reading the memory
// statistics stops the world for a moment, once per scrape.
func GoCollector() Collector {
	return CollectorFunc(func(w *Writer) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		threads, _ := runtime.ThreadCreateProfile(nil)
		for _, s := range []struct {
			name, help, typ string
			v               float64
		}{
			{"go_goroutines", "Number of goroutines that currently exist.", Gauge, float64(runtime.NumGoroutine())},
			{"go_threads", "Number of OS threads created.", Gauge, float64(threads)},
			{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", Gauge, float64(ms.Alloc)},
			{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", Counter, float64(ms.TotalAlloc)},
			{"go_memstats_sys_bytes", "Number of bytes obtained from system.", Gauge, float64(ms.Sys)},
			{"go_memstats_mallocs_total", "Total number of heap objects allocated.", Counter, float64(ms.Mallocs)},
			{"go_memstats_frees_total", "Total number of heap objects frees.", Counter, float64(ms.Frees)},
			{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use.", Gauge, float64(ms.HeapAlloc)},
			{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", Gauge, float64(ms.HeapSys)},
			{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", Gauge, float64(ms.HeapIdle)},
			{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", Gauge, float64(ms.HeapInuse)},
			{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", Gauge, float64(ms.HeapReleased)},
			{"go_memstats_heap_objects", "Number of currently allocated objects.", Gauge, float64(ms.HeapObjects)},
			{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments.", Gauge, float64(ms.StackInuse)},
			{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", Gauge, float64(ms.NextGC)},
			{"go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", Gauge, float64(ms.LastGC) / 1e9},
			{"go_gc_cycles_total", "Number of completed GC cycles.", Counter, float64(ms.NumGC)},
			{"go_gc_pause_seconds_total", "Total time the world was stopped for garbage collection.", Counter, float64(ms.PauseTotalNs) / 1e9},
		} {
			w.Family(s.name, s.help, s.typ)
			w.Sample(s.name, s.v)
		}
		w.Family("go_info", "Information about the Go environment.", Gauge)
		w.Sample("go_info", 1, "version", runtime.Version())
	})
}
