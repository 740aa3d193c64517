package udprun

import (
	"time"
)

// schedLog is the sender's log of its own schedule: the error of every
// deadline (actual send − deadline) in a histogram of 1 µs bins up to
// 100 ms, the deadlines missed, and the bytes sent per rateBin for the
// sustained rate over a sliding window. Its memory is fixed by the
// planned duration, never by what happens.
type schedLog struct {
	hist      [maxErrUs + 1]int64
	deadlines int64
	missed    int64
	tolerance time.Duration
	maxErr    time.Duration
	bins      []int64
	start     time.Time
	first     time.Time
	last      time.Time
	bytes     int64
}

const (
	maxErrUs = 100_000
	rateBin  = 10 * time.Millisecond
)

func newSchedLog(start time.Time, planned, tolerance time.Duration) *schedLog {
	return &schedLog{start: start, tolerance: tolerance, bins: make([]int64, int(planned/rateBin)+2)}
}

// sent logs one deadline met at `at` with n packets of size bytes.
func (l *schedLog) sent(deadline, at time.Time, n int64, size int) {
	e := max(at.Sub(deadline), 0)
	l.deadlines++
	l.hist[min(int64(e/time.Microsecond), maxErrUs)]++
	l.maxErr = max(l.maxErr, e)
	if e > l.tolerance {
		l.missed++
	}
	if l.first.IsZero() {
		l.first = at
	}
	l.last = at
	b := n * int64(size)
	l.bytes += b
	if i := int(at.Sub(l.start) / rateBin); i >= 0 && i < len(l.bins) {
		l.bins[i] += b
	}
}

// quantile is the error's q-quantile (0 < q ≤ 1) in µs, to the bin.
func (l *schedLog) quantile(q float64) float64 {
	if l.deadlines == 0 {
		return 0
	}
	want := int64(q*float64(l.deadlines) + 0.5)
	want = max(want, 1)
	var c int64
	for i, n := range l.hist {
		if c += n; c >= want {
			return float64(i)
		}
	}
	return maxErrUs
}

// rates are the mean sending rate and the least over sliding windows of
// win (the whole span when it is shorter), in bit/s. The span runs one
// headway past the last send: the last burst's time.
func (l *schedLog) rates(win, headway time.Duration) (mean, least float64, used time.Duration) {
	if l.first.IsZero() {
		return 0, 0, 0
	}
	span := l.last.Sub(l.first) + headway
	mean = float64(l.bytes) * 8 / span.Seconds()
	lo := int(l.first.Sub(l.start) / rateBin)
	hi := min(int(l.last.Sub(l.start)/rateBin)+1, len(l.bins))
	k := int(win / rateBin)
	if hi-lo <= k {
		return mean, mean, span
	}
	var sum int64
	for i := lo; i < lo+k; i++ {
		sum += l.bins[i]
	}
	m := sum
	for i := lo + k; i < hi; i++ {
		sum += l.bins[i] - l.bins[i-k]
		m = min(m, sum)
	}
	return mean, float64(m) * 8 / win.Seconds(), win
}
