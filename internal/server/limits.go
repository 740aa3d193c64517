package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// admission enforces the server's limits on starting tests: a bearer token,
// a cap on concurrent tests, and a per-IP start rate. It is shared by
// sonde's own sessions and ndt7 tests.
type admission struct {
	token      string
	maxActive  int
	perIPRate  int // starts per minute per IP; 0 = unlimited
	mu         sync.Mutex
	active     int
	buckets    map[string]*bucket
	lastPurged time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// rejection is a refused admission: the HTTP status and the one line the
// client shows.
type rejection struct {
	status int
	reason string
}

func (r *rejection) Error() string { return r.reason }

func newAdmission(token string, maxActive, perIPRate int) *admission {
	return &admission{token: token, maxActive: maxActive, perIPRate: perIPRate, buckets: map[string]*bucket{}}
}

// admit checks the request against every limit and, on success, takes a
// concurrency slot that the returned release gives back (exactly once).
func (a *admission) admit(r *http.Request, now time.Time) (release func(), err error) {
	if a.token != "" && !tokenOK(r, a.token) {
		return nil, &rejection{http.StatusUnauthorized, "this server needs a valid bearer token (--token)"}
	}
	ip := clientIP(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.maxActive > 0 && a.active >= a.maxActive {
		return nil, &rejection{http.StatusTooManyRequests,
			fmt.Sprintf("server busy: %d of %d test slots in use, try again later", a.active, a.maxActive)}
	}
	if a.perIPRate > 0 && !a.take(ip, now) {
		return nil, &rejection{http.StatusTooManyRequests,
			fmt.Sprintf("rate limit: at most %d tests per minute from %s", a.perIPRate, ip)}
	}
	a.active++
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			a.active--
			a.mu.Unlock()
		})
	}, nil
}

// take spends one token of ip's bucket; the caller holds a.mu.
func (a *admission) take(ip string, now time.Time) bool {
	if now.Sub(a.lastPurged) > time.Minute {
		// Full buckets carry no state; dropping them bounds the map by the
		// number of IPs seen in the last minute.
		for k, b := range a.buckets {
			if now.Sub(b.last) > time.Minute {
				delete(a.buckets, k)
			}
		}
		a.lastPurged = now
	}
	rate := float64(a.perIPRate)
	b, ok := a.buckets[ip]
	if !ok {
		b = &bucket{tokens: rate, last: now}
		a.buckets[ip] = b
	}
	b.tokens = min(rate, b.tokens+now.Sub(b.last).Minutes()*rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (a *admission) activeCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.active
}

func tokenOK(r *http.Request, token string) bool {
	h := r.Header.Get("Authorization")
	if v, ok := strings.CutPrefix(h, "Bearer "); ok && v == token {
		return true
	}
	// Browsers cannot set headers on WebSocket requests.
	return r.URL.Query().Get("token") == token
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
