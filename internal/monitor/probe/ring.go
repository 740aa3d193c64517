package probe

import (
	"sync"

	"github.com/sonde-project/sonde/internal/model"
)

// DefaultRingSize holds a minute of samples at 8 targets × 3 kinds × 100/s
// with room to spare (64 Ki samples, about 5 MB): the daemon drains once a
// second, so only a stalled store ever fills it.
const DefaultRingSize = 1 << 16

// Ring is the bounded queue between the probers and their consumer. Push
// never blocks and never grows the ring: when it is full the oldest sample
// is overwritten and counted in Dropped, so a stalled consumer costs
// samples, never memory.
type Ring struct {
	mu      sync.Mutex
	buf     []model.ProbeSample
	head, n int
	dropped uint64
}

// NewRing makes a ring of the given capacity (DefaultRingSize if ≤ 0).
func NewRing(capacity int) *Ring {
	if capacity <= 0 {
		capacity = DefaultRingSize
	}
	return &Ring{buf: make([]model.ProbeSample, capacity)}
}

// Push adds one sample.
func (r *Ring) Push(s model.ProbeSample) {
	r.mu.Lock()
	if r.n == len(r.buf) {
		r.buf[r.head] = s
		r.head = (r.head + 1) % len(r.buf)
		r.dropped++
	} else {
		r.buf[(r.head+r.n)%len(r.buf)] = s
		r.n++
	}
	r.mu.Unlock()
}

// Drain appends every queued sample to dst, oldest first, and empties the
// ring. Passing the previous batch's slice[:0] makes it allocation-free.
func (r *Ring) Drain(dst []model.ProbeSample) []model.ProbeSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	end := r.head + r.n
	if end <= len(r.buf) {
		dst = append(dst, r.buf[r.head:end]...)
	} else {
		dst = append(dst, r.buf[r.head:]...)
		dst = append(dst, r.buf[:end-len(r.buf)]...)
	}
	r.head, r.n = 0, 0
	return dst
}

// Len is the number of queued samples.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Dropped counts samples overwritten before they were drained.
func (r *Ring) Dropped() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}
