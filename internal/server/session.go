package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/tcpinfo"
)

// session is one client's test: a capability (the unguessable ID) under
// which it opens streams until the session expires or is closed.
type session struct {
	id       string
	start    time.Time
	expires  time.Time
	interval time.Duration // TCP_INFO sampling
	maxBytes int64         // payload budget for the whole session, 0 = none
	ctx      context.Context
	cancel   context.CancelFunc
	release  func()

	bytes atomic.Int64

	mu    sync.Mutex
	flows []*flow
}

// flow is one stream of a session, and what the server measured of it.
type flow struct {
	id   int
	kind string
	tag  string
	done chan struct{}

	mu    sync.Mutex
	bytes func() int64    // live payload count, set once the stream runs
	rc    syscall.RawConn // for live TCP_INFO
	since func(time.Time) float64

	// report is written once, before done is closed.
	report protocol.FlowReport
}

// start publishes the running stream's live readings.
func (f *flow) start(bytes func() int64, rc syscall.RawConn, since func(time.Time) float64) {
	f.mu.Lock()
	f.bytes, f.rc, f.since = bytes, rc, since
	f.mu.Unlock()
}

// live returns the flow's current state for the live endpoint.
func (f *flow) live() (protocol.LiveFlow, bool) {
	select {
	case <-f.done:
		return protocol.LiveFlow{ID: f.id, Kind: f.kind, Bytes: f.report.Bytes, Done: true}, true
	default:
	}
	f.mu.Lock()
	bytes, rc, since := f.bytes, f.rc, f.since
	f.mu.Unlock()
	if bytes == nil {
		return protocol.LiveFlow{}, false
	}
	lf := protocol.LiveFlow{ID: f.id, Kind: f.kind, Bytes: bytes()}
	if smp, err := tcpinfo.Read(rc, since(time.Now())); err == nil {
		lf.TCPInfo = smp
	}
	return lf, true
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// since returns seconds since the session started.
func (s *session) since(t time.Time) float64 { return t.Sub(s.start).Seconds() }

// addFlow registers a flow and numbers it; false if the session has no room
// for another.
func (s *session) addFlow(f *flow, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.flows) >= max {
		return false
	}
	f.id = len(s.flows)
	s.flows = append(s.flows, f)
	return true
}

func (s *session) flowList() []*flow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*flow(nil), s.flows...)
}

// budget returns how many payload bytes the session may still move, or 0 if
// unlimited; -1 if spent.
func (s *session) budget() int64 {
	if s.maxBytes <= 0 {
		return 0
	}
	left := s.maxBytes - s.bytes.Load()
	if left <= 0 {
		return -1
	}
	return left
}

// registry holds the live sessions, and finished ones for a grace period so
// a client can still fetch its report.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*session
}

func newRegistry() *registry {
	return &registry{sessions: map[string]*session{}}
}

func (r *registry) add(s *session) {
	r.mu.Lock()
	r.sessions[s.id] = s
	r.mu.Unlock()
}

func (r *registry) get(id string) *session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

func (r *registry) remove(id string) {
	r.mu.Lock()
	delete(r.sessions, id)
	r.mu.Unlock()
}

func (r *registry) all() []*session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	return out
}
