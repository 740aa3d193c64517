package server

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sonde-project/sonde/internal/protocol"
)

// connLimiter caps the HTTP connections the server holds, per client IP and
// in all, so idle or slow clients cannot use up the file descriptors. It
// follows connections through http.Server.ConnState: a connection counts
// from its accept until it closes or is hijacked. Hijacked connections are
// the test's streams: they are bounded by the test limits instead (max
// concurrent tests × max streams), and their owners close them.
//
// Many clients share one address (an office, a campus, a carrier-grade
// NAT), and each admitted test opens several connections at once (its
// streams, its probes), so the per-IP cap alone would refuse the tests the
// server admitted. Past the per-IP cap a connection is therefore taken on
// probation while the address's admitted work has room for it (room: what
// its live tests may still open, and the free test slots for the requests
// that start one); a connection on probation serves one request, and only
// one that starts work (the admission decides) or belongs to a test of the
// same address (Server.connGate). The per-IP cap still holds for idle
// connections and for everything else.
type connLimiter struct {
	perIP, max int
	log        *slog.Logger
	// room, if set, is how many connections beyond perIP ip's admitted
	// work may hold (called without mu).
	room func(ip string) int

	mu     sync.Mutex
	conns  map[net.Conn]connEntry // counted connections
	byIP   map[string]int         // under the per-IP cap
	probIP map[string]int         // on probation, past the per-IP cap
	// refusedBy counts the connections closed at accept, by the cap that
	// closed them (/metrics).
	refusedBy [numCaps]int64
	logged    time.Time // last log line about refusals
	// refusing holds a slot per refusal being answered (refuseConn).
	refusing chan struct{}
}

// connEntry is a counted connection: its client IP, and whether it is on
// probation (past the per-IP cap, allowed for its address's tests).
type connEntry struct {
	ip        string
	probation bool
}

// maxRefusing bounds the refused connections answered at once: each holds
// its descriptor for up to a second, so under a flood the answers alone
// could use up what the caps protect. Past it, a refused connection is
// closed without an answer.
const maxRefusing = 64

// The connection caps, as counted on /metrics (label reason).
const (
	capTotal = iota // MaxConns
	capPerIP        // MaxConnsPerIP
	numCaps
)

var capNames = [numCaps]string{capTotal: "total_cap", capPerIP: "per_ip_cap"}

// capReasons are the refusals' reasons, as the client shows them.
var capReasons = [numCaps]string{
	capTotal: "server busy: too many connections, try again later",
	capPerIP: "server busy: too many connections from your address, try again later",
}

// capRetry is the Retry-After of a connection refused by a cap.
const capRetry = 10 * time.Second

func newConnLimiter(perIP, max int, log *slog.Logger) *connLimiter {
	return &connLimiter{perIP: perIP, max: max, log: log, conns: map[net.Conn]connEntry{}, byIP: map[string]int{},
		probIP: map[string]int{}, refusing: make(chan struct{}, maxRefusing)}
}

// listener wraps ln (outermost, after TLS, so the connections it returns
// are the ones ConnState sees) with the caps: a connection over a cap is
// refused (refuseConn) and never reaches the HTTP server, so no request of
// it is served; one under them is counted until track sees it closed or
// hijacked. The maps hold at most max entries.
func (l *connLimiter) listener(ln net.Listener) net.Listener { return capListener{ln, l} }

type capListener struct {
	net.Listener
	l *connLimiter
}

func (cl capListener) Accept() (net.Conn, error) {
	for {
		c, err := cl.Listener.Accept()
		if err != nil {
			return nil, err
		}
		refused := cl.l.admit(c)
		if refused < 0 {
			return c, nil
		}
		select {
		case cl.l.refusing <- struct{}{}:
			go func() {
				defer func() { <-cl.l.refusing }()
				refuseConn(c, capReasons[refused])
			}()
		default:
			c.Close()
		}
	}
}

// admit counts c if it is under both caps, or on probation past the
// per-IP one; it returns -1, or the cap that refused it.
func (l *connLimiter) admit(c net.Conn) int {
	ip := connIP(c)
	l.mu.Lock()
	full := l.byIP[ip] >= l.perIP && len(l.conns) < l.max
	l.mu.Unlock()
	room := 0
	if full && l.room != nil {
		room = l.room(ip) // outside mu: it asks the sessions and the admission
	}
	l.mu.Lock()
	refused := -1
	switch {
	case len(l.conns) >= l.max:
		refused = capTotal
	case l.byIP[ip] < l.perIP:
		l.conns[c] = connEntry{ip: ip}
		l.byIP[ip]++
	case l.probIP[ip] < room:
		l.conns[c] = connEntry{ip: ip, probation: true}
		l.probIP[ip]++
	default:
		refused = capPerIP
	}
	var logNow bool
	if refused >= 0 {
		l.refusedBy[refused]++
		// One line a minute at most: a flood must not flood the log.
		if now := time.Now(); now.Sub(l.logged) >= time.Minute {
			l.logged, logNow = now, true
		}
	}
	fromIP, total, refusedSoFar := l.byIP[ip]+l.probIP[ip], len(l.conns), l.refusedBy[capTotal]+l.refusedBy[capPerIP]
	l.mu.Unlock()
	if logNow {
		l.log.Warn("refusing connections over the cap", "client", ip, "from_client", fromIP,
			"per_ip_cap", l.perIP, "room", room, "open", total, "cap", l.max, "refused_so_far", refusedSoFar)
	}
	return refused
}

// refusedOnProbation counts a connection on probation whose request the
// per-IP cap refused (Server.connGate).
func (l *connLimiter) refusedOnProbation() {
	l.mu.Lock()
	l.refusedBy[capPerIP]++
	l.mu.Unlock()
}

// probation tells whether c was taken on probation past the per-IP cap.
func (l *connLimiter) probation(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[c].probation
}

// track is an http.Server.ConnState hook: it forgets a connection that
// closed or was hijacked (a test's stream, bounded by the test limits
// instead).
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateClosed, http.StateHijacked:
		l.mu.Lock()
		if e, ok := l.conns[c]; ok {
			delete(l.conns, c)
			m := l.byIP
			if e.probation {
				m = l.probIP
			}
			if m[e.ip]--; m[e.ip] <= 0 {
				delete(m, e.ip)
			}
		}
		l.mu.Unlock()
	}
}

// refuseConn answers a refused connection with a 503 saying why (the
// error body of every refusal, docs/protocol.md) and closes it, within a
// bounded time and reading at most a few KiB, off the accept path
// (ConnState hooks run on the server's accept loop). A fresh socket's empty
// send buffer takes the few bytes at once; the client's request is drained
// before the close so the kernel sends FIN, not a RST that could discard
// the answer before the client reads it.
func refuseConn(c net.Conn, reason string) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	body, _ := json.Marshal(protocol.ErrorReply{Error: reason})
	body = append(body, '\n')
	msg := "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nRetry-After: " +
		strconv.Itoa(int(capRetry/time.Second)) + "\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
	if _, err := io.WriteString(c, msg); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, 8<<10)
}

// counts returns the connections held, from ip and in all.
func (l *connLimiter) counts(ip string) (fromIP, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byIP[ip] + l.probIP[ip], len(l.conns)
}

// refusedByCap counts the connections refused by one cap (capTotal or capPerIP).
func (l *connLimiter) refusedByCap(which int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refusedBy[which]
}

func connIP(c net.Conn) string {
	a := c.RemoteAddr()
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// deadlines bounds each ordinary request: its body must arrive within
// body, its reply be written within write (both from the end of the
// headers, which http.Server bounds itself). They are per request, not
// http.Server's ReadTimeout and WriteTimeout, for two reasons: a stream's
// upgrade request must not leave a deadline on the connection it hands
// over (hijack in streams.go and gorilla's Upgrade clear what is set here),
// and a read deadline left after the body would cancel the request's
// context under a handler that is still working (net/http's background
// read fails on it), so it is cleared once the body is read.
func deadlines(h http.Handler, body, write time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		now := time.Now()
		// Errors mean a writer without deadlines (e.g. httptest's
		// recorder): nothing to bound.
		_ = rc.SetWriteDeadline(now.Add(write))
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			if rc.SetReadDeadline(now.Add(body)) == nil {
				r.Body = &bodyDeadline{ReadCloser: r.Body, rc: rc}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// bodyDeadline clears the connection's read deadline once the body has
// been read to its end (or failed).
type bodyDeadline struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *bodyDeadline) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		if errors.Is(err, io.EOF) {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}
