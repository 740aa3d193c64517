package server

import (
	"net/http"
	"sync"
	"time"
)

// policy is how a route is admitted. Every route declares one when it is
// mounted (routeMux.handle), so a route that starts work cannot be added
// without going through the admission: the route table's test walks every
// route and refuses one without a policy.
type policy int

const (
	// policyAdmit: the route starts work (a test, a UDP or monitor
	// session, an MBM session, an ndt7 test). A private server checks the
	// token before the handler reads anything (admission.checkToken);
	// the handler then takes its slot through admission.admit (caps and
	// start rate; the token once more).
	policyAdmit policy = iota + 1
	// policySession: the route acts inside work already admitted, named
	// by the unguessable ID its admission returned (streams, reports, a
	// browser's result, WebRTC, closing a session). An unknown ID is 404.
	policySession
	// policyPublic: the route starts nothing (the page, /healthz,
	// /metrics, /ping, past results).
	policyPublic
	// policyProbe: a public route that a running test's latency probes
	// use (sonde's ping, RPM's small object and config, LibreSpeed's
	// getIP): past the per-IP cap it is served to an address that holds
	// a test, as the test's other requests are.
	policyProbe
)

var policyNames = map[policy]string{policyAdmit: "admit", policySession: "session", policyPublic: "public", policyProbe: "probe"}

func (p policy) String() string {
	if n, ok := policyNames[p]; ok {
		return n
	}
	return "undeclared"
}

// route is one entry of the server's route table.
type route struct {
	pattern string // as given to http.ServeMux
	policy  policy
}

// routeMux is the server's mux with its route table. It has no other way
// to mount a handler than handle, which takes the route's policy.
type routeMux struct {
	mux    *http.ServeMux
	admit  *admission
	reject func(http.ResponseWriter, error) // answers a refusal

	mu    sync.Mutex
	table []route
}

func newRouteMux(adm *admission, reject func(http.ResponseWriter, error)) *routeMux {
	return &routeMux{mux: http.NewServeMux(), admit: adm, reject: reject}
}

// handle mounts h at pattern under policy p; policyAdmit routes pass the
// token check first.
func (m *routeMux) handle(pattern string, p policy, h http.Handler) {
	m.mu.Lock()
	m.table = append(m.table, route{pattern: pattern, policy: p})
	m.mu.Unlock()
	if p == policyAdmit {
		h = m.tokenGate(h)
	}
	m.mux.Handle(pattern, h)
}

func (m *routeMux) handleFunc(pattern string, p policy, h http.HandlerFunc) {
	m.handle(pattern, p, h)
}

// routes returns a copy of the route table.
func (m *routeMux) routes() []route {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]route(nil), m.table...)
}

func (m *routeMux) ServeHTTP(w http.ResponseWriter, r *http.Request) { m.mux.ServeHTTP(w, r) }

// tokenGate refuses a request without the server's token before its
// handler parses anything, so no route that starts work can open it first.
func (m *routeMux) tokenGate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := m.admit.checkToken(r, time.Now()); err != nil {
			m.reject(w, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// policyOf returns the policy of the route r goes to (0 if none matches).
func (m *routeMux) policyOf(r *http.Request) policy {
	_, pattern := m.mux.Handler(r)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, rt := range m.table {
		if rt.pattern == pattern {
			return rt.policy
		}
	}
	return 0
}
