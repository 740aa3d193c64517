//go:build !linux

package metrictext

// ProcessCollector writes nothing where there is no /proc.
func ProcessCollector() Collector { return CollectorFunc(func(*Writer) {}) }
