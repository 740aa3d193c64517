package server

import (
	"context"
	"net"
	"net/http"

	"github.com/sonde-project/sonde/internal/httpload"
)

// sessionCtlConns is what a test may hold beside its streams: its control
// requests (report, live, close), its UDP probe session's, and its
// foreign probes (one connection each, a few a second).
const sessionCtlConns = 8

// connRoom is connLimiter.room: the connections ip's admitted work may
// still open past the per-IP cap. Each live test of ip may open its
// remaining streams and sessionCtlConns more (an RPM or LibreSpeed test,
// its flow bound and as many); each free test slot, one
// request to start a test. It is bounded by the test limits, so a client
// claiming one test with thousands of connections gets no more.
func (s *Server) connRoom(ip string) int {
	room := max(s.cfg.MaxConcurrent-s.adm.activeCount(), 0)
	for _, ses := range s.sessions.all() {
		if ses.client != ip || ses.ctx.Err() != nil {
			continue
		}
		ses.mu.Lock()
		room += max(s.cfg.MaxStreams-len(ses.flows), 0) + sessionCtlConns
		ses.mu.Unlock()
	}
	// An RPM or LibreSpeed test: its flows (at most MaxStreams at once,
	// httpload's bound) and its probes.
	for _, g := range s.loads {
		if g.Has(ip) {
			room += s.cfg.MaxStreams + sessionCtlConns
		}
	}
	return room
}

// connKey is the context key of a request's connection (ConnContext).
type connKey struct{}

// withConn keeps the connection for connGate and for the HTTP-load
// protocols (httpload.ConnFrom: their flows' socket options).
func withConn(ctx context.Context, c net.Conn) context.Context {
	return httpload.ConnContext(context.WithValue(ctx, connKey{}, c), c)
}

// connGate serves a connection on probation (connLimiter) one request,
// and only one that starts work (its admission decides), or one of a live
// test of the same address (a stream, a report, a probe); any other gets
// the per-IP cap's refusal.
func (s *Server) connGate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if c == nil || !s.conns.probation(c) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		switch p := s.mux.policyOf(r); {
		case p == policyAdmit,
			(p == policySession || p == policyProbe) && s.hasTest(clientIP(r)):
			h.ServeHTTP(w, r)
			return
		}
		s.conns.refusedOnProbation()
		s.reject(w, &rejection{status: http.StatusServiceUnavailable, reason: capReasons[capPerIP], retryAfter: capRetry})
	})
}

// hasTest tells whether ip holds a live test: a sonde session, or an
// RPM or LibreSpeed test (whose probes and further flows are public or
// admit routes of that same test).
func (s *Server) hasTest(ip string) bool {
	for _, ses := range s.sessions.all() {
		if ses.client == ip && ses.ctx.Err() == nil {
			return true
		}
	}
	for _, g := range s.loads {
		if g.Has(ip) {
			return true
		}
	}
	return false
}
