package metrictext

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ProcessCollector writes the process's usual series (the names
// client_golang's process collector gives them) from /proc/self: CPU
// time, resident and virtual memory, open and maximum descriptors, the
// start time. A file it cannot read leaves its series out.
func ProcessCollector() Collector {
	return CollectorFunc(func(w *Writer) {
		pageSize := float64(os.Getpagesize())
		if f, ok := selfStat(); ok {
			tck := 100.0 // USER_HZ: 100 on every Linux architecture
			write(w, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", Counter, (f.utime+f.stime)/tck)
			write(w, "process_virtual_memory_bytes", "Virtual memory size in bytes.", Gauge, f.vsize)
			write(w, "process_resident_memory_bytes", "Resident memory size in bytes.", Gauge, f.rss*pageSize)
			if boot, ok := bootTime(); ok {
				write(w, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", Gauge, boot+f.start/tck)
			}
		}
		if es, err := os.ReadDir("/proc/self/fd"); err == nil {
			write(w, "process_open_fds", "Number of open file descriptors.", Gauge, float64(len(es)))
		}
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
			write(w, "process_max_fds", "Maximum number of open file descriptors.", Gauge, float64(rl.Cur))
		}
	})
}

func write(w *Writer, name, help, typ string, v float64) {
	w.Family(name, help, typ)
	w.Sample(name, v)
}

type statFields struct{ utime, stime, start, vsize, rss float64 }

// selfStat reads /proc/self/stat (proc(5)): fields after the command
// name, which is in parentheses and may hold spaces.
func selfStat() (statFields, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return statFields{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return statFields{}, false
	}
	fs := strings.Fields(s[i+1:]) // fs[0] is field 3 (state)
	get := func(field int) float64 {
		if field-3 >= len(fs) {
			return 0
		}
		v, _ := strconv.ParseFloat(fs[field-3], 64)
		return v
	}
	if len(fs) < 22 {
		return statFields{}, false
	}
	return statFields{utime: get(14), stime: get(15), start: get(22), vsize: get(23), rss: get(24)}, true
}

func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
