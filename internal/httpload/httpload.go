// Package httpload runs the load of the protocols whose test is many plain
// HTTP requests rather than one session: the responsiveness test's large
// object and upload sink (internal/rpm) and LibreSpeed's garbage and empty
// (internal/librespeed). Those clients open several load requests at once
// and never say when a test starts or ends, so a test here is one client
// IP's load: its first load request is admitted through the embedding
// server's admission (one slot, one start of the per-IP rate), the same IP's
// further load requests join it up to a flow cap, and all of them share the
// test's deadline and byte budget. The test ends, and its slot is given
// back, when its deadline passes or when it has had no load request for
// Idle.
//
// Send writes incompressible payload with TCP_NOTSENT_LOWAT kept at about
// 5 ms of the flow's rate (draft-ietf-ippm-responsiveness-09 §6.1), and
// Receive reads an upload to its end within the budget, so a reply sent
// after it means the bytes arrived.
package httpload

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
	"github.com/sonde-project/sonde/internal/stream"
)

// Defaults of Options.
const (
	DefaultIdle     = 3 * time.Second
	DefaultMaxFlows = 64
	// busyRetry is the Retry-After of a refusal that names no wait (a
	// full server): clients of the draft back off by it (§7).
	busyRetry = 5 * time.Second
	// writeChunk is the size of one payload write: small enough that the
	// budget and deadline are checked often, large enough to cost little.
	writeChunk = 64 << 10
	// readChunk is the buffer one upload is read through.
	readChunk = 32 << 10
	// replyGrace is the time an upload's reply has after its test's end.
	replyGrace = 5 * time.Second
)

// Options configures a Registry.
type Options struct {
	// Protocol names the tests in records and logs ("rpm", "librespeed").
	Protocol string
	// MaxTime bounds a test from its admission; MaxBytes the payload all
	// its flows move, both directions together (0: unlimited).
	MaxTime  time.Duration
	MaxBytes int64
	// MaxFlows bounds the load requests one test runs at once (default
	// DefaultMaxFlows).
	MaxFlows int
	// Idle ends a test that has had no load request open for this long
	// (default DefaultIdle).
	Idle time.Duration
	// Admit runs the embedding server's admission for a new test: a
	// release function on success, a *RejectError (or any error) if not.
	Admit func(r *http.Request) (release func(), err error)
	// Done, if set, is called once per test when it ends.
	Done func(Summary)
	// Rejected, if set, is told the status of every refused load request.
	Rejected func(status int)
}

// RejectError is an Admit error that sets the reply: its status, the line
// the client is shown and, if positive, the Retry-After.
type RejectError struct {
	Status     int
	Reason     string
	RetryAfter time.Duration
}

func (e *RejectError) Error() string { return e.Reason }

// Summary is what a test moved, for the server's records and counters.
type Summary struct {
	Protocol string
	Client   string
	// Start is the test's admission, End the end of its last load request
	// (or its cut), so End−Start is the time it moved data.
	Start time.Time
	End   time.Time
	// Sent is the payload bytes written to the client, Received the
	// upload bytes read from it; Flows the load requests the test ran.
	Sent, Received int64
	Flows          int
	// Cut tells whether the test ended at its deadline or byte limit
	// rather than by its client going quiet.
	Cut string
	// Reports are the test's connections, one per connection and
	// direction, in the form internal/assemble joins into a server record:
	// TCP_INFO series of those it sent on, receive counts of those it
	// read uploads on, their times in seconds since Start.
	Reports []protocol.FlowReport
	// Unrecorded counts the connections past Options.MaxFlows that
	// carried load but are not in Reports.
	Unrecorded int
}

// Registry holds the running tests, one per client IP. Safe for concurrent
// use.
type Registry struct {
	opt     Options
	payload stream.Payload
	mu      sync.Mutex
	tests   map[string]*Test
}

// New returns a registry; payload is the incompressible block Send writes.
func New(opt Options, payload stream.Payload) (*Registry, error) {
	if opt.Admit == nil {
		return nil, errors.New("httpload: no admission")
	}
	if opt.MaxTime <= 0 {
		return nil, errors.New("httpload: no maximum test duration")
	}
	if len(payload) == 0 {
		return nil, errors.New("httpload: empty payload")
	}
	if opt.MaxFlows <= 0 {
		opt.MaxFlows = DefaultMaxFlows
	}
	if opt.Idle <= 0 {
		opt.Idle = DefaultIdle
	}
	return &Registry{opt: opt, payload: payload, tests: map[string]*Test{}}, nil
}

// Test is one client IP's load test.
type Test struct {
	reg      *Registry
	client   string
	start    time.Time
	deadline time.Time
	ctx      context.Context
	cancel   context.CancelFunc
	budget   *stream.Budget // nil: unlimited
	sent     atomic.Int64
	received atomic.Int64
	cut      atomic.Value // string
	flows    flows

	// Guarded by reg.mu.
	open     int
	total    int
	idle     *time.Timer
	lastDone time.Time // when its last load request ended
}

// Has tells whether ip holds a running test: the server lets that
// address's further requests (probes, more flows) past its per-IP
// connection cap, as it does a sonde test's.
func (g *Registry) Has(ip string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tests[ip]
	return t != nil && t.ctx.Err() == nil
}

// Active is the number of tests running (for tests and metrics).
func (g *Registry) Active() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.tests)
}

// Join admits r's load request: into its client's running test, or as a
// new test through Options.Admit. The caller calls Leave when the request
// ends.
func (g *Registry) Join(r *http.Request) (*Test, error) {
	ip := ClientIP(r)
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.tests[ip]; t != nil && t.ctx.Err() == nil {
		if t.open >= g.opt.MaxFlows {
			return nil, &RejectError{Status: http.StatusTooManyRequests, RetryAfter: time.Until(t.deadline),
				Reason: fmt.Sprintf("at most %d load requests at once per test", g.opt.MaxFlows)}
		}
		t.open++
		t.total++
		if t.idle != nil {
			t.idle.Stop()
			t.idle = nil
		}
		return t, nil
	}
	release, err := g.opt.Admit(r)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	t := &Test{reg: g, client: ip, start: now, deadline: now.Add(g.opt.MaxTime), open: 1, total: 1}
	// As many connections recorded as a test may load at once (a sonde
	// session's streams are bounded alike): each keeps a TCP_INFO series
	// of up to tcpinfo.MaxSamples.
	t.flows = flows{ref: now, max: g.opt.MaxFlows}
	t.ctx, t.cancel = context.WithDeadline(context.Background(), t.deadline)
	if g.opt.MaxBytes > 0 {
		t.budget = stream.NewBudget(g.opt.MaxBytes)
	}
	g.tests[ip] = t
	context.AfterFunc(t.ctx, func() {
		release()
		g.mu.Lock()
		if g.tests[ip] == t {
			delete(g.tests, ip)
		}
		total, end, running := t.total, t.lastDone, t.open > 0
		if running || end.IsZero() {
			end = time.Now() // cut with requests running
		}
		g.mu.Unlock()
		cut, _ := t.cut.Load().(string)
		if cut == "" && errors.Is(t.ctx.Err(), context.DeadlineExceeded) {
			cut = "max-duration"
		}
		// The flows' limit is the cut, if it stopped requests that ran.
		limit := ""
		if running {
			limit = map[string]string{"max-bytes": protocol.LimitBytes, "max-duration": protocol.LimitDuration}[cut]
		}
		reps, unrecorded := t.flows.reports(limit)
		if g.opt.Done != nil {
			g.opt.Done(Summary{Protocol: g.opt.Protocol, Client: ip, Start: t.start, End: end,
				Sent: t.sent.Load(), Received: t.received.Load(), Flows: total, Cut: cut, Reports: reps, Unrecorded: unrecorded})
		}
	})
	return t, nil
}

// Start is Join for a handler: the test r's load request joins, or nil
// after answering the refusal (WriteReject) and telling Options.Rejected.
func (g *Registry) Start(w http.ResponseWriter, r *http.Request) *Test {
	t, err := g.Join(r)
	if err != nil {
		status := WriteReject(w, err)
		if g.opt.Rejected != nil {
			g.opt.Rejected(status)
		}
		return nil
	}
	return t
}

// Upload runs one upload request: it joins r's test (or answers the
// refusal), reads the body to its end (Receive), leaves, and tells whether
// the caller may answer success. A body cut at the test's limit is
// answered 413 here, the connection closed after it: counting it as
// arrived would be the error librespeed/speedtest#819 describes.
func (g *Registry) Upload(w http.ResponseWriter, r *http.Request) bool {
	t := g.Start(w, r)
	if t == nil {
		return false
	}
	defer t.Leave()
	_, err := g.Receive(w, r, t)
	if err == nil {
		return true
	}
	if errors.Is(err, ErrLimit) {
		w.Header().Set("Connection", "close")
		http.Error(w, "test limit reached", http.StatusRequestEntityTooLarge)
	}
	return false
}

// Download runs one download request: it joins r's test (or answers the
// refusal), answers 200 with the headers the caller set, sends up to n
// bytes (n < 0: until the test or the client ends) and leaves.
func (g *Registry) Download(w http.ResponseWriter, r *http.Request, n int64) {
	t := g.Start(w, r)
	if t == nil {
		return
	}
	defer t.Leave()
	w.WriteHeader(http.StatusOK)
	_, _ = g.Send(w, r, t, n)
}

// Leave ends one load request of t; the test ends Idle after its last.
func (t *Test) Leave() {
	g := t.reg
	g.mu.Lock()
	defer g.mu.Unlock()
	t.open--
	t.lastDone = time.Now()
	if t.open == 0 && t.idle == nil {
		t.idle = time.AfterFunc(g.opt.Idle, t.cancel)
	}
}

// Context ends with the test.
func (t *Test) Context() context.Context { return t.ctx }

// Sent and Received are the test's payload bytes so far.
func (t *Test) Sent() int64     { return t.sent.Load() }
func (t *Test) Received() int64 { return t.received.Load() }

// take grants up to n bytes of the test's budget.
func (t *Test) take(n int64) int64 {
	if t.budget == nil {
		return n
	}
	g := t.budget.Take(n)
	if g < n {
		t.cut.CompareAndSwap(nil, "max-bytes")
	}
	return g
}

// ErrLimit is returned when a flow stops at its test's byte limit or
// deadline rather than at its client's end.
var ErrLimit = errors.New("httpload: test limit reached")

// Send writes up to n bytes of payload to w (n < 0: until the test or the
// client ends), and returns the bytes written. Headers are the caller's;
// Send never sets a Content-Encoding.
func (g *Registry) Send(w http.ResponseWriter, r *http.Request, t *Test, n int64) (int64, error) {
	rc := http.NewResponseController(w)
	// The test's deadline replaces the server's per-request write timeout:
	// a large object is meant to outlast it, and must not outlast the test.
	_ = rc.SetWriteDeadline(t.deadline)
	conn := ConnFrom(r.Context())
	LossBased(conn) // working conditions: see loadCongestion
	lw := newLowat(conn)
	fl := t.flows.get(conn, true)
	stop := context.AfterFunc(t.ctx, func() { _ = rc.SetWriteDeadline(time.Now()) })
	defer stop()
	var sent int64
	for n < 0 || sent < n {
		if t.ctx.Err() != nil {
			return sent, ErrLimit
		}
		if r.Context().Err() != nil {
			return sent, r.Context().Err()
		}
		want := int64(writeChunk)
		if n >= 0 {
			want = min(want, n-sent)
		}
		got := t.take(want)
		if got == 0 {
			return sent, ErrLimit
		}
		off := int(sent % int64(len(g.payload)-writeChunk+1))
		m, err := w.Write(g.payload[off : off+int(got)])
		sent += int64(m)
		t.sent.Add(int64(m))
		fl.moved(t.start, m)
		if err != nil {
			if t.ctx.Err() != nil {
				return sent, ErrLimit
			}
			return sent, fmt.Errorf("httpload: write: %w", err)
		}
		lw.wrote(m)
	}
	return sent, nil
}

// Receive reads r's body to its end within the test's budget and deadline,
// discarding it, and returns the bytes read. On ErrLimit the body was cut
// short: the caller answers an error, not the success a client would count.
func (g *Registry) Receive(w http.ResponseWriter, r *http.Request, t *Test) (int64, error) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(t.deadline)
	// The reply goes out after the body, which may take the whole test.
	_ = rc.SetWriteDeadline(t.deadline.Add(replyGrace))
	stop := context.AfterFunc(t.ctx, func() { _ = rc.SetReadDeadline(time.Now()) })
	defer stop()
	fl := t.flows.get(ConnFrom(r.Context()), false)
	var buf [readChunk]byte
	var got int64
	for {
		m, err := r.Body.Read(buf[:])
		if m > 0 {
			granted := t.take(int64(m))
			got += granted
			t.received.Add(granted)
			fl.moved(t.start, int(granted))
			if granted < int64(m) {
				return got, ErrLimit
			}
		}
		if errors.Is(err, io.EOF) {
			// Clear the test's deadline: the reply is still to go out.
			_ = rc.SetReadDeadline(time.Time{})
			return got, nil
		}
		if err != nil {
			if t.ctx.Err() != nil {
				return got, ErrLimit
			}
			return got, fmt.Errorf("httpload: read: %w", err)
		}
	}
}

// WriteReject answers a refused load request: the status and reason of a
// RejectError with its Retry-After (busyRetry for a 429 that names none),
// else 500. Body is plain text: these clients show no server errors.
func WriteReject(w http.ResponseWriter, err error) int {
	status, reason := http.StatusInternalServerError, err.Error()
	var rej *RejectError
	if errors.As(err, &rej) {
		status, reason = rej.Status, rej.Reason
		wait := rej.RetryAfter
		if status == http.StatusTooManyRequests && wait <= 0 {
			wait = busyRetry
		}
		if wait > 0 {
			secs := int64((wait + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, reason+"\n")
	return status
}

// ClientIP is the request's peer address without its port: the key of a
// test. Forwarding headers are not trusted.
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type connKey struct{}

// ConnContext is an http.Server ConnContext that keeps each connection in
// its requests' context, so that Send can set its socket options (HTTP/2
// hands handlers no connection).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnFrom is the connection ConnContext stored, unwrapped from TLS; nil
// if none.
func ConnFrom(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}

// Route is one endpoint of a protocol served over HTTP load. StartsWork
// routes take a test's slot (a large download, an upload): the server
// mounts them behind its admission (token first), the others (a
// configuration, a one-byte probe) as public.
type Route struct {
	Pattern    string
	StartsWork bool
	Handler    http.Handler
}

// Register mounts routes on a plain mux (tests and embedders without
// admission).
func Register(mux *http.ServeMux, routes []Route) {
	for _, rt := range routes {
		mux.Handle(rt.Pattern, rt.Handler)
	}
}
