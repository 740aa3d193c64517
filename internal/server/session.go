package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
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
	// client and software are the client's address and its name for
	// itself (the session request's client field), for the record.
	client, software string

	// budget is maxBytes shared by every stream of the session, both
	// directions; nil when unlimited.
	budget *stream.Budget
	// idle is how long the session may go without an open stream before
	// it is reclaimed; 0 = never (the deadline still ends it).
	idle time.Duration

	mu    sync.Mutex
	flows []*flow
	open  int         // streams open now
	held  bool        // kept to its deadline whatever its streams do
	timer *time.Timer // pending idle reclaim, nil if none
	gen   int         // arms of the idle timer; a stale timer does nothing
	ended string      // why the session ended before its deadline, if it did
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
		return protocol.LiveFlow{ID: f.id, Kind: f.kind, Tag: f.tag, Bytes: f.report.Bytes, Done: true}, true
	default:
	}
	f.mu.Lock()
	bytes, rc, since := f.bytes, f.rc, f.since
	f.mu.Unlock()
	if bytes == nil {
		return protocol.LiveFlow{}, false
	}
	lf := protocol.LiveFlow{ID: f.id, Kind: f.kind, Tag: f.tag, Bytes: bytes()}
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

// watch sets up the session's limits once it is created: the byte budget
// and the idle reclaim, so that a client that never opens a stream, or
// vanishes (killed, unplugged after its sockets closed), frees its test slot
// within idle instead of holding it to the deadline.
func (s *session) watch(idle time.Duration) {
	if s.maxBytes > 0 {
		s.budget = stream.NewBudget(s.maxBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = idle
	s.armIdle()
}

// armIdle (re)starts the idle timer if no stream is open; the caller holds
// s.mu.
func (s *session) armIdle() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.idle <= 0 || s.held || s.open > 0 || s.ctx.Err() != nil {
		return
	}
	s.gen++
	gen := s.gen
	s.timer = time.AfterFunc(s.idle, func() {
		s.mu.Lock()
		reclaim := gen == s.gen && s.open == 0 && !s.held && s.ctx.Err() == nil
		if reclaim {
			s.ended = fmt.Sprintf("no stream open for %v (idle limit)", s.idle)
		}
		s.mu.Unlock()
		if reclaim {
			s.cancel()
		}
	})
}

// streamOpened and streamClosed keep count of the open streams, which
// keep the session alive.
func (s *session) streamOpened() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.gen++
}

func (s *session) streamClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	s.armIdle()
}

// hold keeps the session to its deadline: for activity the server cannot
// watch as a stream (the page's WebRTC test).
func (s *session) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
	s.armIdle() // stops a pending timer
}

// expired reports whether the session's deadline has passed. The clock is
// asked too: a stream's write deadline (the same instant) can fire a moment
// before the context's timer marks it done.
func (s *session) expired() bool {
	return s.ctx.Err() == context.DeadlineExceeded || !time.Now().Before(s.expires)
}

// endReason says why a session that is over ended, for the client that
// still tries to use it.
func (s *session) endReason(maxDuration time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended != "":
		return "test session ended: " + s.ended
	case s.expired():
		return "test session expired (limit " + maxDuration.String() + ")"
	}
	return "test session closed"
}

// maxSessionDurationS bounds the numbers of a session request before they
// become durations: a day, far above any server's limit and far below
// time.Duration's range.
const maxSessionDurationS = 86400

// validSessionRequest checks every number of a session request: finite and
// in range, before any is converted to a time.Duration.
func validSessionRequest(req protocol.SessionRequest) error {
	switch {
	case !finiteIn(req.DurationS, 0, maxSessionDurationS):
		return fmt.Errorf("duration_s must be a number of seconds in [0, %d], got %g", maxSessionDurationS, req.DurationS)
	case !finiteIn(req.TCPInfoIntervalMs, 0, 60000):
		return fmt.Errorf("tcpinfo_interval_ms must be a number of milliseconds in [0, 60000], got %g", req.TCPInfoIntervalMs)
	}
	return nil
}

// finiteIn reports whether v is a finite number in [lo, hi].
func finiteIn(v, lo, hi float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= lo && v <= hi
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
